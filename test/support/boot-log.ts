/**
 * Every start of Directus in a test run, one JSON line each in `.test-cache/boots.jsonl`: the reporter
 * (suite-progress.ts) ends the run with the count and what they cost per test file, so the next change sees what
 * a boot it adds costs. Vitest-free: the chaos run and the benchmarks start instances through the same code.
 */
import { appendFileSync, mkdirSync, readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { CACHE_DIR } from './paths.ts';

export interface BootRecord {
	/** The test file that asked for the instance (from the call stack), or `setup` for the global set-up's own. */
	file: string;
	leg: string;
	/** From the spawn to the first answer of `/server/ping`. */
	ms: number;
}

const BOOT_LOG = path.join(CACHE_DIR, 'boots.jsonl');

/** Starts a new log: called once per run, by the global set-up, before any suite boots. */
export function resetBootLog(): void {
	rmSync(BOOT_LOG, { force: true });
}

/** Appends one boot. The caller's test file is read off the stack: the harness has no other way to know it. */
export function recordBoot(leg: string, ms: number): void {
	const stack = new Error().stack ?? '';
	const match = /\/((?:test|src)\/[^\s:()]+\.test\.ts)/.exec(stack);
	const record: BootRecord = { file: match?.[1] ?? 'setup', leg, ms: Math.round(ms) };
	mkdirSync(CACHE_DIR, { recursive: true });
	appendFileSync(BOOT_LOG, `${JSON.stringify(record)}\n`);
}

/** The boots recorded since the last reset. */
export function readBootLog(): BootRecord[] {
	try {
		return readFileSync(BOOT_LOG, 'utf8')
			.split('\n')
			.filter(Boolean)
			.map((line) => JSON.parse(line) as BootRecord);
	} catch {
		return [];
	}
}


