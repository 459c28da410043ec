//! Gemini CLI's sessions as a mount lists them: by project, one directory per session.
