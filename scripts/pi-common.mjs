// pi-common.mjs — shared helpers for the fixture scripts in this folder.
//
// Loads Pi's own SessionManager / buildSessionContext / convertToLlm from a
// pi-oracle checkout (a folder with node_modules, see ../../shared/pi-oracle or
// $PI_ORACLE_DIR), the same way pi-oracle.mjs's loadPi() does: resolve the
// package's main entry and import the two core modules beside it by URL.
// Also provides the seeded crypto.randomUUID / fixed clock of pi-oracle.mjs's
// installDeterminism(), which must be installed BEFORE Pi is imported.

import crypto from "node:crypto";
import fs from "node:fs";
import { syncBuiltinESMExports } from "node:module";
import path from "node:path";
import { pathToFileURL } from "node:url";

export const PKGS = {
	mariozechner: "@mariozechner/pi-coding-agent",
	earendil: "@earendil-works/pi-coding-agent",
	"1.6": "@earendil-works/pi-coding-agent",
};

/** `--pi` names: 0.73.1, 0.81.1 and 1.6.0 (`1.6`, alias `latest`). */
export const PI_VERSIONS = { mariozechner: "0.73.1", earendil: "0.81.1", "1.6": "1.6.0" };

/**
 * The folder holding a Pi client's `node_modules`: the oracle itself for 0.73.1 and
 * 0.81.1, its `pi-1.6/` folder for 1.6.0 (the `@earendil-works` scope holds 0.81.1 in
 * the oracle's own node_modules).
 */
export function clientDir(dir, which) {
	return which === "1.6" || which === "latest" ? path.join(oracleDir(dir), "pi-1.6") : oracleDir(dir);
}

export function oracleDir(explicit) {
	const dir = explicit || process.env.PI_ORACLE_DIR;
	if (!dir) throw new Error("set PI_ORACLE_DIR (or pass --oracle DIR): a pi-oracle folder with node_modules installed");
	return path.resolve(dir);
}

export function mulberry32(seed) {
	let a = seed >>> 0;
	return () => {
		a = (a + 0x6d2b79f5) >>> 0;
		let t = a;
		t = Math.imul(t ^ (t >>> 15), t | 1);
		t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
		return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
	};
}

export function seedFrom(str) {
	let h = 2166136261;
	for (const ch of String(str)) {
		h ^= ch.codePointAt(0);
		h = Math.imul(h, 16777619);
	}
	return h >>> 0;
}

export function uuidFrom(rng) {
	const b = new Uint8Array(16);
	for (let i = 0; i < 16; i++) b[i] = Math.floor(rng() * 256);
	b[6] = (b[6] & 0x0f) | 0x40;
	b[8] = (b[8] & 0x3f) | 0x80;
	const h = Buffer.from(b).toString("hex");
	return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

/**
 * Seeded crypto.randomUUID (Pi's entry ids are its first 8 chars). With
 * `alsoRandomBytes`, globalThis.crypto.getRandomValues is seeded too (the UUID v7
 * session ids of 0.73.1's `uuid` package and 0.81.1's pi-ai use it). Call before loadPi().
 */
export function installSeededIds(seed, alsoRandomBytes = false) {
	const rng = mulberry32(seedFrom(`ids:${seed}`));
	crypto.randomUUID = () => uuidFrom(rng);
	syncBuiltinESMExports();
	if (alsoRandomBytes) {
		const bytesRng = mulberry32(seedFrom(`bytes:${seed}`));
		const fill = (view) => {
			const u8 = new Uint8Array(view.buffer, view.byteOffset, view.byteLength);
			for (let i = 0; i < u8.length; i++) u8[i] = Math.floor(bytesRng() * 256);
			return view;
		};
		Object.defineProperty(globalThis.crypto, "getRandomValues", { value: fill, configurable: true, writable: true });
	}
}

const RealDate = Date;
export const clock = { now: RealDate.UTC(2026, 0, 5, 9, 0, 0) };

/** Virtual clock: `new Date()` / Date.now() return clock.now. Call before loadPi(). */
export function installFixedClock(startMs) {
	if (startMs !== undefined) clock.now = startMs;
	class SimDate extends RealDate {
		constructor(...a) {
			if (a.length === 0) super(clock.now);
			else super(...a);
		}
		static now() {
			return clock.now;
		}
	}
	globalThis.Date = SimDate;
}

export async function loadPi(dir, which = "earendil") {
	if (which === "latest") which = "1.6";
	const pkg = PKGS[which] || which;
	const pkgDir = path.join(clientDir(dir, which), "node_modules", ...pkg.split("/"));
	if (!fs.existsSync(pkgDir)) throw new Error(`${pkg} (${which}) is not installed in ${pkgDir}: run npm ci there`);
	const pkgJson = JSON.parse(fs.readFileSync(path.join(pkgDir, "package.json"), "utf8"));
	const mainRel = pkgJson.exports?.["."]?.import ?? pkgJson.main ?? "./dist/index.js";
	const main = pathToFileURL(path.join(pkgDir, mainRel));
	const sm = await import(new URL("./core/session-manager.js", main).href);
	const msgs = await import(new URL("./core/messages.js", main).href);
	return {
		pkg,
		version: pkgJson.version,
		SessionManager: sm.SessionManager,
		buildSessionContext: sm.buildSessionContext,
		migrateSessionEntries: sm.migrateSessionEntries,
		CURRENT_SESSION_VERSION: sm.CURRENT_SESSION_VERSION,
		convertToLlm: msgs.convertToLlm,
	};
}
