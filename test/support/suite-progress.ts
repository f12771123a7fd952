/**
 * The suite's own console reporter for `npm test`: one progress line per test file as it ends, and the ten
 * slowest files at the end. It also keeps every file's duration in `.test-cache/suite-durations.json`, which the
 * sequencer (suite-order.ts) reads to start the slowest files first on the next run.
 *
 * Vitest's default reporter stays on beside it for failures and the summary; this one says how far the run is,
 * which the default reporter does not when its output is not a terminal (CI).
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { Reporter, TestModule, TestSpecification } from 'vitest/node';
import { readBootLog } from './boot-log.ts';
import { connectionSummary } from './connection-watch.ts';
import { durationsFile, suiteKey } from './suite-durations.ts';

export default class SuiteProgress implements Reporter {
	#total = 0;
	#done = 0;
	#started = Date.now();
	readonly #durations = new Map<string, number>();

	onTestRunStart(specifications: ReadonlyArray<TestSpecification>): void {
		this.#total = specifications.length;
		this.#started = Date.now();
	}

	onTestModuleEnd(module: TestModule): void {
		this.#done += 1;
		const seconds = (module.diagnostic().duration / 1000).toFixed(1);
		const counts = { passed: 0, failed: 0, skipped: 0 };
		for (const test of module.children.allTests()) {
			const state = test.result().state;
			if (state === 'passed') counts.passed += 1;
			else if (state === 'failed') counts.failed += 1;
			else counts.skipped += 1;
		}
		const key = suiteKey(module.project.name, module.moduleId);
		this.#durations.set(key, module.diagnostic().duration);
		const mark = module.ok() ? 'ok  ' : 'FAIL';
		const elapsed = Math.round((Date.now() - this.#started) / 1000);
		const skipped = counts.skipped ? `, ${counts.skipped} skipped` : '';
		const failed = counts.failed ? `, ${counts.failed} failed` : '';
		process.stdout.write(
			`[suite ${this.#done}/${this.#total} at ${elapsed} s] ${mark} ${key}: ${counts.passed} passed${failed}${skipped} in ${seconds} s\n`,
		);
	}

	onTestRunEnd(): void {
		if (this.#durations.size === 0) return;
		const slowest = [...this.#durations].sort((a, b) => b[1] - a[1]).slice(0, 10);
		const lines = slowest.map(([key, ms]) => `  ${(ms / 1000).toFixed(1).padStart(7)} s  ${key}`);
		process.stdout.write(`\nThe ten slowest test files:\n${lines.join('\n')}\n`);
		process.stdout.write(bootSummary());
		process.stdout.write(connectionSummary());
		this.#save();
	}

	/** Merges this run's durations into the file the sequencer reads; a partial run keeps the others'. */
	#save(): void {
		const file = durationsFile();
		let known: Record<string, number> = {};
		try {
			known = JSON.parse(readFileSync(file, 'utf8')) as Record<string, number>;
		} catch {
			// first run, or an unreadable file: start afresh
		}
		for (const [key, ms] of this.#durations) known[key] = Math.round(ms);
		mkdirSync(path.dirname(file), { recursive: true });
		writeFileSync(file, `${JSON.stringify(known, null, '\t')}\n`);
	}
}

/** How many times the run started Directus, what a start took, and the files that started it most. */
function bootSummary(): string {
	const boots = readBootLog();
	if (boots.length === 0) return '';
	const total = boots.reduce((sum, boot) => sum + boot.ms, 0);
	const byFile = new Map<string, { count: number; ms: number }>();
	for (const boot of boots) {
		const known = byFile.get(boot.file) ?? { count: 0, ms: 0 };
		byFile.set(boot.file, { count: known.count + 1, ms: known.ms + boot.ms });
	}
	const rows = [...byFile].sort((a, b) => b[1].ms - a[1].ms).slice(0, 10);
	const lines = rows.map(([file, { count, ms }]) => `  ${String(count).padStart(4)} boots ${(ms / 1000).toFixed(1).padStart(7)} s  ${file}`);
	return `\nDirectus boots: ${boots.length}, ${(total / 1000).toFixed(1)} s in all (${(total / boots.length / 1000).toFixed(1)} s each on average); the files that boot most:\n${lines.join('\n')}\n`;
}
