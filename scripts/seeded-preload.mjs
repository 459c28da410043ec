// seeded-preload.mjs — `node --import ./seeded-preload.mjs …` (or via NODE_OPTIONS,
// which child processes inherit) makes Pi's randomness repeatable: a seeded
// crypto.randomUUID (entry ids), seeded crypto.getRandomValues (UUID v7 session ids) and a fixed clock at 2026-01-05T09:00:00Z.
// Seed: $PI_FIXTURE_SEED (default "fixtures"). Used to make the edge-case runs
// byte-stable; the ids Pi appends are still "random-looking" 8-hex ids.
import { installFixedClock, installSeededIds } from "./pi-common.mjs";

installSeededIds(process.env.PI_FIXTURE_SEED || "fixtures", true);
installFixedClock();
