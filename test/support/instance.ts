import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { appendFileSync, copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { recordBoot } from './boot-log.ts';
import { cloneMariaDatabase, dropMariaDatabase } from './mariadb.ts';
import { cloneDatabase, dropDatabase } from './postgres.ts';
import { ADMIN_EMAIL, ADMIN_PASSWORD, ADMIN_TOKEN, CACHE_DIR, MARIADB, PG, ROOT, SECRET, SHARED_EXTENSIONS, START_SCRIPT } from './paths.ts';
import { directusCommand, installPackedBundle, STOCK_HOME, writeDotEnv } from './stock-install.ts';

/**
 * Where an integration suite runs: a database vendor on a Directus host. `sqlite` and `postgres` run on the
 * project's own Directus 12; `sqlite-d11` runs on the Directus 11 host of hosts/directus-11; `mariadb` runs on the
 * project's own Directus 12 with MariaDB through Directus's `mysql` client. `stock` runs Directus as admins do
 * (stock-install.ts): the packed bundle in a project's extensions/, a new SQLite database, `directus bootstrap`
 * and `directus start` of the newest Directus release (hosts/directus-12-stock).
 */
export type Leg = 'sqlite' | 'postgres' | 'sqlite-d11' | 'mariadb' | 'stock';

/** The database vendor of a leg. */
function legVendor(leg: Leg): 'sqlite' | 'postgres' | 'mariadb' {
	return leg === 'postgres' || leg === 'mariadb' ? leg : 'sqlite';
}

/**
 * The connection pool of a test instance on PostgreSQL or MariaDB: Knex's default keeps at least two connections
 * open and lets idle ones go after 30 s. A run has many instances alive at once, and a parked shared instance
 * (instance-broker.ts, SIGSTOP) keeps every connection it held when it was parked: with the defaults PostgreSQL's
 * 100 connections ran out at the end of a run ("sorry, too many clients already", stall.test.ts). With no minimum
 * and a second's idle time, an instance holds what it is using, and the broker parks one only after its idle
 * connections have gone (PARK_DELAY_MS there). The most in use at once stays Directus's default of 10.
 */
const POOL_ENV: Record<string, string> = { DB_POOL__MIN: '0', DB_POOL__IDLE_TIMEOUT_MILLIS: '1000' };

/** Directus's database variables for a PostgreSQL database. */
export function postgresEnv(database: string): Record<string, string> {
	return { DB_CLIENT: 'pg', DB_HOST: PG.host, DB_PORT: String(PG.port), DB_USER: PG.user, DB_PASSWORD: PG.password, DB_DATABASE: database, ...POOL_ENV };
}

/** Directus's database variables for a MariaDB database. */
export function mariadbEnv(database: string): Record<string, string> {
	return {
		DB_CLIENT: 'mysql',
		DB_HOST: MARIADB.host,
		DB_PORT: String(MARIADB.port),
		DB_USER: MARIADB.user,
		DB_PASSWORD: MARIADB.password,
		DB_DATABASE: database,
		...POOL_ENV,
	};
}

/** The directory whose node_modules holds the leg's Directus (PSEO_DIRECTUS_HOME, see scripts/lib/hosts.mjs). */
export function legHome(leg: Leg): string {
	if (leg === 'stock') return STOCK_HOME;
	return leg === 'sqlite-d11' ? path.join(ROOT, 'hosts', 'directus-11') : ROOT;
}

export interface DirectusInstance {
	url: string;
	leg: Leg;
	adminToken: string;
	/**
	 * The model every website made by `createWebsite` names, on an instance shared with other suites: the one its
	 * tenant router passes to this suite's own fake (directus.ts, `shareDirectusWithFake`).
	 */
	websiteModel?: string;
	/** Output of the process, for assertions on logs and for failure reports. */
	output(): string;
	/** SIGTERM and wait for exit. */
	stop(): Promise<number | null>;
	/** Whether the current process is still running (false once it exited, crashed or was killed). */
	running(): boolean;
	/** SIGKILL: a crash. */
	kill(): Promise<void>;
	/**
	 * SIGSTOP to Directus and the start script: a stalled worker. It keeps its connections and its state; its
	 * lease lapses while it cannot renew it.
	 */
	pause(): void;
	/** SIGCONT after `pause`: the stalled worker goes on where it stopped, with whatever it was about to write. */
	resume(): void;
	/**
	 * Start again on the same database (after stop or kill), with the environment the instance was launched with
	 * plus `extraEnv`. `extraEnv` holds for this start only: the next restart does not inherit it.
	 */
	restart(extraEnv?: Record<string, string>): Promise<void>;
	/** The `extraEnv` the current process was started with (the first start's `startEnv`, or `{}`). */
	startedWith(): Readonly<Record<string, string>>;
	/** Removes the database copy and temp files. */
	dispose(): Promise<void>;
}

export interface DatabaseCopy {
	leg: Leg;
	env: Record<string, string>;
	dispose(): Promise<void>;
}

/**
 * A fresh database copied from a template: a SQLite file, or a PostgreSQL database used as TEMPLATE.
 * `template` is the file path (SQLite) or the database name (PostgreSQL, MariaDB).
 */
export async function copyDatabase(leg: Leg, template: string, prefix = 'pseo_t'): Promise<DatabaseCopy> {
	if (legVendor(leg) === 'sqlite') {
		const dir = mkdtempSync(path.join(os.tmpdir(), 'pseo-db-'));
		const file = path.join(dir, 'directus.db');
		// Without a template (the stock leg's own, made once by global-setup.ts), `directus bootstrap` makes the database.
		if (template !== '') copyFileSync(template, file);
		return {
			leg,
			env: { DB_CLIENT: 'sqlite3', DB_FILENAME: file },
			dispose: async () => rmSync(dir, { recursive: true, force: true }),
		};
	}
	const name = `${prefix}_${process.pid}_${randomBytes(4).toString('hex')}`;
	if (legVendor(leg) === 'mariadb') {
		await cloneMariaDatabase(template, name);
		return { leg, env: mariadbEnv(name), dispose: () => dropMariaDatabase(name) };
	}
	await cloneDatabase(template, name);
	return { leg, env: postgresEnv(name), dispose: () => dropDatabase(name) };
}

export async function freePort(): Promise<number> {
	return new Promise((resolve, reject) => {
		const server = createServer();
		server.unref();
		server.on('error', reject);
		server.listen(0, '127.0.0.1', () => {
			const address = server.address();
			server.close(() => resolve(typeof address === 'object' && address ? address.port : 0));
		});
	});
}

/** Environment every test instance gets: quiet, isolated, and never reaching past loopback. */
export function baseEnv(port: number, workDir: string): Record<string, string> {
	return {
		PORT: String(port),
		HOST: '127.0.0.1',
		PUBLIC_URL: `http://127.0.0.1:${port}`,
		SECRET,
		ADMIN_EMAIL,
		ADMIN_PASSWORD,
		ADMIN_TOKEN,
		// One folder for every instance of the run, installed by global-setup.ts (the start script finds it holds the
		// build and leaves it): at one path, the bundle's compiled code is in Node's compile cache for every start.
		EXTENSIONS_PATH: SHARED_EXTENSIONS,
		EXTENSIONS_MUST_LOAD: 'true',
		EXTENSIONS_AUTO_RELOAD: 'false',
		STORAGE_LOCAL_ROOT: path.join(workDir, 'uploads'),
		// Directus writes the app's extension bundle to TEMP_PATH/app-extensions (default ./node_modules/.directus,
		// under the working directory every instance shares): one instance's start rewrote the bundle another was
		// serving, and the browser got the app's HTML for /extensions/sources/index.js. Each instance has its own.
		TEMP_PATH: path.join(workDir, 'tmp'),
		// Only the browser suite opens the app, and sets SERVE_APP=true itself. Serving it makes Directus bundle the
		// app extensions with rollup at every start, for nothing a request-level test reads.
		SERVE_APP: 'false',
		// Node's on-disk cache of compiled modules, shared by every start of the run and the next: Directus loads
		// thousands of modules at each start, and compiling them is much of its CPU.
		NODE_COMPILE_CACHE: path.join(CACHE_DIR, 'node-compile-cache'),
		LOG_LEVEL: process.env['PSEO_TEST_LOG_LEVEL'] ?? 'warn',
		LOG_STYLE: 'raw',
		// Directus's Core licence reports telemetry whatever TELEMETRY says; tests keep it on loopback.
		TELEMETRY: 'false',
		TELEMETRY_URL: 'http://127.0.0.1:9',
		COMPLIANCE_URL: 'http://127.0.0.1:9',
		CACHE_ENABLED: 'false',
		// Directus hands each request a deep copy of its whole schema unless the schema is frozen; the copy was a fifth
		// of an instance's CPU in the request-heavy suites (a --cpu-prof of generation.test.ts). Frozen, a write to
		// the schema throws, so the extension is held to more here than under the default: code that works frozen
		// works on a copy. The stock leg keeps Directus's default (see launchDirectus).
		CACHE_SCHEMA_FREEZE_ENABLED: 'true',
		RATE_LIMITER_ENABLED: 'false',
		// Directus sheds load with 503 when its event loop lags; on a shared two-core machine running several
		// instances at once that is noise, not a finding, so tests measure the product without it.
		PRESSURE_LIMITER_ENABLED: 'false',
		// The provider and sitemap fixtures are on loopback; private networks are refused unless a test allows them.
		OPENAI_API_KEY: 'test-key',
		OPENAI_BASE_URL: 'http://127.0.0.1:9/v1',
		PSEO_SWEEP_INTERVAL_MS: '200',
		PSEO_BATCH_POLL_INTERVAL_MS: '100',
		PSEO_LEASE_MS: '3000',
		PSEO_SHUTDOWN_GRACE_MS: '2000',
	};
}

/** Starts Directus on `database` the way `npm start` does (without rebuilding), and waits until it answers. */
export async function launchDirectus(options: {
	leg: Leg;
	database: DatabaseCopy;
	env?: Record<string, string>;
	/** The first start's `extraEnv`, as `restart(extraEnv)` gives a later one: `startedWith()` answers it. */
	startEnv?: Record<string, string>;
	/** A file that receives the output as well, for processes that read it without this object (a shared instance). */
	logFile?: string;
}): Promise<DirectusInstance> {
	const database = options.database;
	const workDir = mkdtempSync(path.join(os.tmpdir(), 'pseo-instance-'));
	mkdirSync(path.join(workDir, 'uploads'), { recursive: true });
	const port = await freePort();
	const url = `http://127.0.0.1:${port}`;
	const env = { ...baseEnv(port, workDir), PSEO_DIRECTUS_HOME: legHome(options.leg), ...database.env, ...options.env };
	let child: ChildProcess | null = null;
	let log = '';
	let launchedWith: Record<string, string> = {};

	const note = (text: string) => {
		log += text;
		if (options.logFile) appendFileSync(options.logFile, text);
	};
	const capture = (started: ChildProcess) => {
		started.stdout?.on('data', (chunk: Buffer) => note(chunk.toString()));
		started.stderr?.on('data', (chunk: Buffer) => note(chunk.toString()));
		return started;
	};
	// A copy of the stock template is bootstrapped already, as the other legs' copies are.
	let bootstrapped = typeof database.env['DB_FILENAME'] === 'string' && existsSync(database.env['DB_FILENAME']);
	const launch = async (extraEnv: Record<string, string> = {}) => {
		note(`\n--- start ${new Date().toISOString()} ---\n`);
		const began = performance.now();
		launchedWith = { ...extraEnv };
		if (options.leg === 'stock') {
			// As an admin runs it: the configuration in the project's .env, `directus bootstrap` once, then `directus start`.
			// The packed bundle in the project's own extensions/, as an admin installs it; not the shared folder.
			const config: Record<string, string> = { ...env, EXTENSIONS_PATH: path.join(workDir, 'extensions'), ...extraEnv };
			// The project's choice of Directus, and its frozen schema: the stock leg runs Directus's defaults.
			delete config['PSEO_DIRECTUS_HOME'];
			delete config['CACHE_SCHEMA_FREEZE_ENABLED'];
			writeDotEnv(workDir, config);
			if (!existsSync(path.join(workDir, 'extensions'))) installPackedBundle(workDir);
			if (!bootstrapped) {
				const bootstrap = capture(directusCommand(workDir, ['bootstrap']));
				const code = await new Promise<number | null>((resolve) => bootstrap.once('exit', resolve));
				if (code !== 0) throw new Error(`directus bootstrap exited with ${code}:\n${log}`);
				bootstrapped = true;
			}
			child = capture(directusCommand(workDir, ['start']));
		} else {
			// Every database a test launches on is a copy of a template that this Directus bootstrapped (global-setup.ts),
			// so the bootstrap step of `npm start` would find nothing to do: skipping it saves a whole Directus load per start.
			child = capture(
				spawn(process.execPath, [START_SCRIPT, '--skip-build', '--skip-bootstrap'], {
					cwd: ROOT,
					env: { ...process.env, ...env, ...extraEnv },
					stdio: ['ignore', 'pipe', 'pipe'],
				}),
			);
		}
		await waitForPing(url, child, () => log);
		recordBoot(options.leg, performance.now() - began);
	};

	const waitExit = (signal: NodeJS.Signals) =>
		new Promise<number | null>((resolve) => {
			const current = child;
			if (!current || current.exitCode !== null || current.signalCode !== null) return resolve(current?.exitCode ?? null);
			// Directus ends a graceful shutdown by raising the signal again (terminus): scripts/start.mjs reports that as
			// exit code 0, and so does the stock leg, which runs no start script.
			current.once('exit', (code, signal) => resolve(code ?? (options.leg === 'stock' && signal === 'SIGTERM' ? 0 : null)));
			current.kill(signal);
		});

	await launch(options.startEnv);

	return {
		url,
		leg: options.leg,
		adminToken: ADMIN_TOKEN,
		output: () => log,
		stop: () => waitExit('SIGTERM'),
		running: () => {
			const current = child as ChildProcess | null;
			return !!current && current.exitCode === null && current.signalCode === null;
		},
		kill: async () => {
			// start.mjs forwards signals but SIGKILL cannot be forwarded: kill Directus itself, then the wrapper.
			const pid = child?.pid;
			if (pid) killTree(pid);
			await waitExit('SIGKILL');
		},
		pause: () => {
			if (child?.pid) signalTree(child.pid, 'SIGSTOP');
		},
		resume: () => {
			if (child?.pid) signalTree(child.pid, 'SIGCONT');
		},
		restart: (extraEnv = {}) => launch(extraEnv),
		startedWith: () => launchedWith,
		dispose: async () => {
			// A stop that hangs (a worker whose write waits on a lock a failed test still holds) must not hold the suite's
			// hook until its timeout: past DISPOSE_GRACE_MS the process is killed.
			const stopped = await Promise.race([waitExit('SIGTERM').then(() => true), delay(DISPOSE_GRACE_MS, false, { ref: false })]);
			if (!stopped) {
				note(`\n--- not stopped ${DISPOSE_GRACE_MS} ms after SIGTERM: killed ---\n`);
				if (child?.pid) killTree(child.pid);
				await waitExit('SIGKILL');
			}
			await database.dispose();
			rmSync(workDir, { recursive: true, force: true });
		},
	};
}

/** How long `dispose()` waits for a graceful stop: the shutdown grace of a test instance is 2 s. */
const DISPOSE_GRACE_MS = 30_000;

function killTree(pid: number): void {
	signalTree(pid, 'SIGKILL');
}

/** Sends `signal` to a process and all its descendants, children first. */
function signalTree(pid: number, signal: NodeJS.Signals): void {
	for (const child of childPids(pid)) signalTree(child, signal);
	try {
		process.kill(pid, signal);
	} catch {
		// already gone
	}
}

function childPids(pid: number): number[] {
	try {
		return readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);
	} catch {
		return [];
	}
}

async function waitForPing(url: string, child: ChildProcess, log: () => string, timeoutMs = 90_000): Promise<void> {
	const deadline = Date.now() + timeoutMs;
	while (Date.now() < deadline) {
		if (child.exitCode !== null) throw new Error(`Directus exited with ${child.exitCode} before answering:\n${log()}`);
		try {
			const res = await fetch(`${url}/server/ping`);
			if (res.ok) return;
		} catch {
			// not listening yet
		}
		await new Promise((resolve) => setTimeout(resolve, 150));
	}
	throw new Error(`Directus did not answer on ${url} within ${timeoutMs} ms:\n${log()}`);
}
