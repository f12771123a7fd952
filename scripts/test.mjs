// npm test: install the Directus 11 host when missing (scripts/lib/hosts.mjs), then the whole vitest suite (unit
// tests and integration tests against real Directus instances: Directus 12 on SQLite and, when reachable, PostgreSQL;
// Directus 11 on SQLite), with the type check and the unused-export check (knip) beside its set-up. Ends with one
// summary line "N passed, N failed".
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { ensureHosts } from './lib/hosts.mjs';
import { root } from './lib/node-runtime.mjs';

const bin = (name) => path.join(root, 'node_modules', '.bin', name);
const results = path.join(root, '.test-cache', 'vitest-results.json');
mkdirSync(path.dirname(results), { recursive: true });
rmSync(results, { force: true });

ensureHosts();

// The type check and the unused-export check (knip: exports, files and dependencies that nothing uses) run beside
// vitest's global set-up, whose template bootstraps leave a core idle for much of their time; a failed check ends the
// run. Their output is kept and printed whole once both end, so that it does not interleave with vitest's.
const vitest = spawn(
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
	// Relayed, not inherited: vitest ends with process.exit, which drops whatever its stdout still queued for a full
	// pipe (a slow reader of the log lost the last twenty files and the summary). This process reads it as it comes,
	// holds what its own stdout cannot take yet, and lets Node flush it before it ends.
	{ cwd: root, stdio: ['inherit', 'pipe', 'pipe'], env: { ...process.env, PSEO_SERVER_NODE_FLAGS: serverNodeFlags(), ...(process.stdout.isTTY ? { FORCE_COLOR: '1' } : {}) } },
);
vitest.stdout.on('data', (chunk) => process.stdout.write(chunk));
vitest.stderr.on('data', (chunk) => process.stderr.write(chunk));
const vitestExit = new Promise((resolve) => {
	vitest.on('error', (error) => {
		console.error(error.message);
		resolve(1);
	});
	vitest.on('close', (status) => resolve(status ?? 1));
});

// Not process.exit: output still queued for a pipe that is full (a slow reader of the log) would be lost.
process.exitCode = await outcome();

/** The run's exit status: the first failed check's, or vitest's once it ends. */
async function outcome() {
	const checks = await Promise.all([
		check('type check', bin('tsc'), ['--noEmit', '-p', 'tsconfig.json']),
		check('unused-export check (knip)', bin('knip'), ['--no-progress']),
	]);
	for (const { name, status, output } of checks) {
		process.stdout.write(output);
		if (status !== 0) {
			console.error(`${name} failed`);
			vitest.kill('SIGTERM');
			await vitestExit;
			return status ?? 1;
		}
	}
	const status = await vitestExit;
	if (existsSync(results)) {
		const summary = JSON.parse(readFileSync(results, 'utf8'));
		const skipped = (summary.numPendingTests ?? 0) + (summary.numTodoTests ?? 0);
		console.log(`tests: ${summary.numPassedTests} passed, ${summary.numFailedTests} failed, ${skipped} skipped`);
	}
	return status;
}

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

/**
 * The flags of every test instance's Node (scripts/start.mjs), before any the caller gives. A start of Directus
 * allocates much that dies young: with 64 MB semi-spaces instead of V8's 16 MB it collects less often, and a start
 * took 11 % less CPU (a median of 2.19 s against 2.46 s of CPU, five starts each on SQLite, alternated, timed by
 * hand; the run starts about 120). Only here: `npm start` and the benchmarks keep the product's own flags.
 */
function serverNodeFlags() {
	return ['--max-semi-space-size=64', process.env.PSEO_SERVER_NODE_FLAGS ?? ''].join(' ').trim();
}
