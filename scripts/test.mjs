// npm test: type-check, the unused-export check (knip), install the Directus 11 host when missing
// (scripts/lib/hosts.mjs), then the whole vitest suite (unit tests and integration tests against real Directus
// instances: Directus 12 on SQLite and, when reachable, PostgreSQL; Directus 11 on SQLite). Ends with one summary
// line "N passed, N failed".
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { ensureHosts } from './lib/hosts.mjs';
import { root } from './lib/node-runtime.mjs';

const bin = (name) => path.join(root, 'node_modules', '.bin', name);
const results = path.join(root, '.test-cache', 'vitest-results.json');
mkdirSync(path.dirname(results), { recursive: true });
rmSync(results, { force: true });

// The type check and the unused-export check (knip: exports, files and dependencies that nothing uses) each keep
// one core busy for a while: side by side they take the time of the slower one.
const checks = await Promise.all([
	check('type check', bin('tsc'), ['--noEmit', '-p', 'tsconfig.json']),
	check('unused-export check (knip)', bin('knip'), ['--no-progress']),
]);
for (const { name, status, output } of checks) {
	process.stdout.write(output);
	if (status !== 0) {
		console.error(`${name} failed`);
		process.exit(status ?? 1);
	}
}

ensureHosts();

const vitest = spawnSync(
	bin('vitest'),
	[
		'run',
		'--reporter=default',
		// A progress line per test file, and the ten slowest at the end (test/support/suite-progress.ts).
		'--reporter=./test/support/suite-progress.ts',
		'--reporter=json',
		`--outputFile.json=${results}`,
		...process.argv.slice(2),
	],
	{ cwd: root, stdio: 'inherit' },
);

if (existsSync(results)) {
	const summary = JSON.parse(readFileSync(results, 'utf8'));
	const skipped = (summary.numPendingTests ?? 0) + (summary.numTodoTests ?? 0);
	console.log(`tests: ${summary.numPassedTests} passed, ${summary.numFailedTests} failed, ${skipped} skipped`);
}
process.exit(vitest.status ?? 1);

/** Runs a check to its end, its output kept to be printed whole (two checks side by side must not interleave). */
function check(name, command, args) {
	return new Promise((resolve) => {
		const child = spawn(command, args, { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] });
		let output = '';
		child.stdout.on('data', (chunk) => (output += chunk));
		child.stderr.on('data', (chunk) => (output += chunk));
		child.on('error', (error) => resolve({ name, status: 1, output: `${output}${error.message}\n` }));
		child.on('close', (status) => resolve({ name, status, output }));
	});
}
