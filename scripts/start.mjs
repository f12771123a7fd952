// npm start: build the extension, create or migrate the Directus database, create the first admin on a new
// database, and serve Directus with the extension (which applies snapshots/ on start-up). Idempotent on an
// existing database; SIGTERM/SIGINT are forwarded so in-flight work is drained or handed back.
//
// The service lives as long as the process that started this script (npm, or whatever ran it): when that
// process goes away, Directus is stopped as on SIGTERM, never left serving as an orphan. To run it detached,
// detach that process (a service manager, or `nohup npm start`).
//
//   node scripts/start.mjs [--skip-build] [--skip-bootstrap]
//
// PSEO_DIRECTUS_HOME picks the Directus that serves (scripts/lib/hosts.mjs): unset, the project's own Directus 12;
// hosts/directus-11, the Directus 11 host, installed here first if it is not yet.
import { spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { parseEnv } from 'node:util';
import { directusHome, directusVersion, EXTRA_HOSTS, ensureHost } from './lib/hosts.mjs';
import { installBundle } from './lib/install-bundle.mjs';
import { nodeBinary, nodeEnv, root } from './lib/node-runtime.mjs';

const args = new Set(process.argv.slice(2));
// Read before the build and bootstrap, which block: a parent that dies meanwhile is still noticed.
const startedBy = process.ppid;
const node = nodeBinary();
const cli = path.join(root, 'scripts', 'directus-cli.mjs');

const env = resolveEnv();
const extensionsPath = path.resolve(root, env.EXTENSIONS_PATH);
const home = directusHome(env);
const extraHost = EXTRA_HOSTS.find((name) => path.join(root, 'hosts', name) === home);
if (extraHost) ensureHost(extraHost, { log });

if (!args.has('--skip-build')) {
	log('building the extension');
	run(node, [path.join(root, 'node_modules', '@directus', 'extensions-sdk', 'cli.js'), 'build', '--no-minify']);
}
installBundle(extensionsPath);

// --skip-bootstrap is for a database this very Directus has bootstrapped already, such as the test suites' copies
// of a bootstrapped template: `directus bootstrap` then finds nothing to do, yet loads the whole of Directus in a
// process of its own to find it out (seconds of CPU at every start).
if (args.has('--skip-bootstrap')) {
	log('database bootstrap skipped (--skip-bootstrap)');
} else {
	log(`bootstrapping the database (${env.DB_CLIENT}${env.DB_CLIENT === 'sqlite3' ? ` at ${env.DB_FILENAME}` : ''})`);
	const bootstrap = run(node, [cli, 'bootstrap'], { capture: true });
	if (bootstrap.includes('Adding first admin user') && env.__GENERATED_ADMIN_PASSWORD) {
		// Printed once: the password exists nowhere else.
		log(`first admin created: ${env.ADMIN_EMAIL} / ${env.__GENERATED_ADMIN_PASSWORD}`);
	}
}
delete env.__GENERATED_ADMIN_PASSWORD;

log(`serving Directus ${directusVersion(home)} on ${env.PUBLIC_URL}`);
// V8 lets the old generation grow to as much as four times what was live after a full collection before it
// collects again. A bulk ingest holds each chunk of pages across database round trips, long enough to be promoted,
// so its garbage piles up there while the live heap stays near 175 MB. Growing by 30 % keeps the garbage near the
// live heap (bench/scale.bench.ts printed 133 MB of RSS growth for a 100,000-page job at 30 %, 166 MB at 50 %, at
// the same ingest rate); V8 still decides when to collect, and marks concurrently.
const HEAP_FLAGS = ['--heap-growing-percent=30'];
// Flags for the server's Node itself (`--cpu-prof`, `--heapsnapshot-signal=SIGUSR2`): NODE_OPTIONS refuses some of
// them. They come after the defaults above, and V8 keeps the last value of a flag given twice.
const nodeFlags = [...HEAP_FLAGS, ...(env.PSEO_SERVER_NODE_FLAGS ?? '').split(/\s+/).filter(Boolean)];
const server = spawn(node, [...nodeFlags, cli, 'start'], { cwd: root, env: nodeEnv(env), stdio: 'inherit' });
for (const signal of ['SIGTERM', 'SIGINT']) {
	process.on(signal, () => server.kill(signal));
}
// A signal to npm reaches this script only when npm runs it directly (the `exec` in package.json); through an
// `sh -c` wrapper npm's forwarded SIGTERM kills the shell alone, and a SIGKILLed npm forwards nothing. Either
// way this process is re-parented, which is what the watch below looks for.
const orphanWatch = setInterval(() => {
	if (process.ppid === startedBy) return;
	clearInterval(orphanWatch);
	server.kill('SIGTERM');
	log(`the process that started this one (pid ${startedBy}) is gone: stopping Directus`);
}, 250);
server.on('exit', (code, signal) => process.exit(code ?? (signal ? 0 : 1)));

function resolveEnv() {
	const dotenvPath = path.resolve(root, process.env.CONFIG_PATH ?? '.env');
	const fromFile = existsSync(dotenvPath) ? parseEnv(readFileSync(dotenvPath, 'utf8')) : {};
	const merged = { ...fromFile, ...process.env };
	const port = merged.PORT ?? '8055';
	const defaults = {
		DB_CLIENT: 'sqlite3',
		PORT: port,
		PUBLIC_URL: `http://localhost:${port}`,
		EXTENSIONS_PATH: './extensions',
		EXTENSIONS_AUTO_RELOAD: 'false',
		ADMIN_EMAIL: 'admin@example.com',
		// Directus reports usage to its servers unless told not to; a self-hosted install should opt in itself.
		TELEMETRY: 'false',
		LOG_LEVEL: 'info',
	};
	const result = { ...defaults, ...merged };
	if (result.DB_CLIENT === 'sqlite3') result.DB_FILENAME ??= './data/directus.db';
	if (result.DB_FILENAME) mkdirSync(path.dirname(path.resolve(root, result.DB_FILENAME)), { recursive: true });
	result.SECRET ??= persistentSecret();
	if (!result.ADMIN_PASSWORD) {
		result.ADMIN_PASSWORD = randomBytes(12).toString('base64url');
		result.__GENERATED_ADMIN_PASSWORD = result.ADMIN_PASSWORD;
	}
	return result;
}

// Without a stable SECRET every restart would invalidate all login tokens; keep a generated one beside the data.
function persistentSecret() {
	const file = path.join(root, 'data', '.secret');
	if (existsSync(file)) return readFileSync(file, 'utf8').trim();
	mkdirSync(path.dirname(file), { recursive: true });
	const secret = randomBytes(32).toString('base64url');
	writeFileSync(file, `${secret}\n`);
	chmodSync(file, 0o600);
	return secret;
}

function run(command, argv, { capture = false } = {}) {
	const result = spawnSync(command, argv, {
		cwd: root,
		env: nodeEnv(env),
		stdio: capture ? ['ignore', 'pipe', 'inherit'] : 'inherit',
		encoding: 'utf8',
	});
	if (capture && result.stdout) process.stdout.write(result.stdout);
	if (result.status !== 0) {
		log(`${path.basename(argv[0] ?? command)} ${argv.slice(1).join(' ')} failed (exit ${result.status})`);
		process.exit(result.status ?? 1);
	}
	return result.stdout ?? '';
}

function log(message) {
	console.log(`[pseo-automation] ${message}`);
}
