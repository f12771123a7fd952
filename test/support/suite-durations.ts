/**
 * How long each test file took, by `project:relative/path`: measured by the reporter (suite-progress.ts) into
 * `.test-cache/suite-durations.json` at the end of every run, and read by the sequencer (suite-order.ts). A clean
 * clone has no cache yet: it falls back to `suite-durations.json` beside this file, the durations of a full run
 * committed with the suites, so that CI also starts the slowest files first.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

/** The file the reporter writes after each run. */
export function durationsFile(): string {
	return path.join(ROOT, '.test-cache', 'suite-durations.json');
}

/** The key of a test file: its project and its path from the repository root. */
export function suiteKey(project: string, moduleId: string): string {
	return `${project}:${path.relative(ROOT, moduleId)}`;
}

function read(file: string): Record<string, number> {
	try {
		return JSON.parse(readFileSync(file, 'utf8')) as Record<string, number>;
	} catch {
		return {};
	}
}

/** Known durations in milliseconds: this machine's last runs over the committed ones. */
export function knownDurations(): Record<string, number> {
	return { ...read(path.join(ROOT, 'test', 'support', 'suite-durations.json')), ...read(durationsFile()) };
}
