// npm test: type-check, the unused-export check (knip), install the Directus 11 host when missing
// (scripts/lib/hosts.mjs), then the whole vitest suite (unit tests and integration tests against real Directus
// instances: Directus 12 on SQLite and, when reachable, PostgreSQL; Directus 11 on SQLite). Ends with one summary
// line "N passed, N failed".
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { ensureHosts } from './lib/hosts.mjs';
import { root } from './lib/node-runtime.mjs';

const bin = (name) => path.join(root, 'node_modules', '.bin', name);
const results = path.join(root, '.test-cache', 'vitest-results.json');
mkdirSync(path.dirname(results), { recursive: true });
rmSync(results, { force: true });

const typecheck = spawnSync(bin('tsc'), ['--noEmit', '-p', 'tsconfig.json'], { cwd: root, stdio: 'inherit' });
if (typecheck.status !== 0) {
	console.error('type check failed');
	process.exit(typecheck.status ?? 1);
}

// Dead code fails the build: knip reports exports, files and dependencies that nothing uses.
const knip = spawnSync(bin('knip'), ['--no-progress'], { cwd: root, stdio: 'inherit' });
if (knip.status !== 0) {
	console.error('unused-export check (knip) failed');
	process.exit(knip.status ?? 1);
}

ensureHosts();

const vitest = spawnSync(
	bin('vitest'),
	['run', '--reporter=default', '--reporter=json', `--outputFile.json=${results}`, ...process.argv.slice(2)],
	{ cwd: root, stdio: 'inherit' },
);

if (existsSync(results)) {
	const summary = JSON.parse(readFileSync(results, 'utf8'));
	const skipped = (summary.numPendingTests ?? 0) + (summary.numTodoTests ?? 0);
	console.log(`tests: ${summary.numPassedTests} passed, ${summary.numFailedTests} failed, ${skipped} skipped`);
}
process.exit(vitest.status ?? 1);
