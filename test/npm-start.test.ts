import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { adminItems, call, eventually, plannedWebsite, waitForJob } from './support/api.ts';
import { copyDatabase, type DatabaseCopy, type DirectusInstance } from './support/directus.ts';
import { startFakeProvider, type FakeProvider } from './support/fake-provider/server.ts';
import { baseEnv, freePort, launchDirectus } from './support/instance.ts';
import { ADMIN_TOKEN, ROOT } from './support/paths.ts';

// Operating contract section 1: "The process stops cleanly on SIGTERM/SIGINT, finishing or handing back in-flight
// work". The process is the one the user started, `npm start`, not the script npm runs.

/** PSEO_SHUTDOWN_GRACE_MS of every test instance (baseEnv). */
const GRACE_MS = Number(baseEnv(0, os.tmpdir())['PSEO_SHUTDOWN_GRACE_MS']);
/** What a stop may take beyond the grace: Directus closing its server and database, the orphan watch's poll. */
const STOP_BOUND_MS = GRACE_MS + 10_000;

interface ProcessEntry {
	pid: number;
	/** Start time in clock ticks since boot: tells the process apart from a later one with the same pid. */
	startTime: string;
	command: string;
}

interface NpmStart {
	npm: ChildProcess;
	url: string;
	exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
	output(): string;
	/** npm and its descendants once the service answered. */
	tree: ProcessEntry[];
	/** The extension's API as the helpers of support/api.ts see an instance (they use url, adminToken, output). */
	api: DirectusInstance;
}

const BULK = '/pseo-endpoints/trigger/bulk-generation';

describe('npm start', () => {
	let fake: FakeProvider;
	const running = new Set<NpmStart>();
	const databases = new Set<DatabaseCopy>();
	const workDirs = new Set<string>();

	beforeAll(async () => {
		fake = await startFakeProvider();
	});
	afterEach((context) => {
		for (const run of running) {
			if (context.task.result?.state === 'fail') console.error(run.output().slice(-6000));
			// Whatever a failed test left behind, so that it does not serve on into the next one.
			const tree = run.tree.length > 0 ? run.tree : processTree(run.npm.pid!);
			for (const entry of tree.filter(isAlive)) killQuietly(entry.pid);
		}
		running.clear();
		fake.reset();
	});
	afterAll(async () => {
		for (const database of databases) await database.dispose();
		for (const dir of workDirs) rmSync(dir, { recursive: true, force: true });
		await fake?.close();
	});

	async function npmStart(options: { database: DatabaseCopy; env?: Record<string, string>; ownGroup?: boolean }): Promise<NpmStart> {
		const workDir = mkdtempSync(path.join(os.tmpdir(), 'pseo-npm-start-'));
		workDirs.add(workDir);
		mkdirSync(path.join(workDir, 'uploads'), { recursive: true });
		const port = await freePort();
		const url = `http://127.0.0.1:${port}`;
		// dist/ is built by the global setup; `--skip-build` is passed on to scripts/start.mjs.
		const npm = spawn('npm', ['start', '--', '--skip-build'], {
			cwd: ROOT,
			// The app is served, as for anyone who runs npm start (the other suites leave it off, see baseEnv).
			env: { ...process.env, ...baseEnv(port, workDir), SERVE_APP: 'true', ...options.database.env, ...options.env },
			stdio: ['ignore', 'pipe', 'pipe'],
			// Its own process group, as a shell gives a foreground job, so that Ctrl-C can be sent to the group.
			detached: options.ownGroup ?? false,
		});
		let log = '';
		npm.stdout.on('data', (chunk: Buffer) => (log += chunk.toString()));
		npm.stderr.on('data', (chunk: Buffer) => (log += chunk.toString()));
		const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
			npm.once('exit', (code, signal) => resolve({ code, signal })),
		);
		const run: NpmStart = {
			npm,
			url,
			exited,
			output: () => log,
			tree: [],
			api: { url, adminToken: ADMIN_TOKEN, output: () => log } as DirectusInstance,
		};
		running.add(run);
		await eventually(
			async () => {
				if (npm.exitCode !== null || npm.signalCode !== null) throw new Error(`npm start exited before answering:\n${log}`);
				return answers(url);
			},
			90_000,
			`npm start answering on ${url}`,
		);
		run.tree = processTree(npm.pid!);
		return run;
	}

	async function freshDatabase(): Promise<DatabaseCopy> {
		const database = await copyDatabase('sqlite');
		databases.add(database);
		return database;
	}

	/** Sends a signal, then waits until every process of the tree seen before it has ended, within the bound. */
	async function expectCleanStop(run: NpmStart, send: () => void): Promise<void> {
		const tree = run.tree;
		// npm, the start script and Directus at least (a shell between npm and the script, on some setups).
		expect(tree.length).toBeGreaterThanOrEqual(3);
		expect(tree.some((entry) => entry.command.includes('directus-cli.mjs'))).toBe(true);
		send();
		const deadline = Date.now() + STOP_BOUND_MS;
		while (tree.some(isAlive) && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 100));
		expect(tree.filter(isAlive).map((entry) => `${entry.pid} ${entry.command}`)).toEqual([]);
		expect(await answers(run.url)).toBe(false);
	}

	it('1 SIGTERM to the npm start process hands in-flight work back and leaves no process of the service', async () => {
		const database = await freshDatabase();
		// With a one-minute lease, only a job that was handed back can be resumed within the wait below.
		const env = { OPENAI_BASE_URL: fake.url, PSEO_BULK_MODE: 'concurrent', PSEO_CONCURRENCY: '2', PSEO_LEASE_MS: '60000' };
		const run = await npmStart({ database, env });
		const { user, pseoId } = await plannedWebsite(run.api, 100, 6);
		// Mid-job, provably: one page stored, the next ones out at the provider when SIGTERM arrives.
		fake.configure({ holdChat: true });
		const res = await call(run.url, 'POST', BULK, { token: user.token, body: { pseo_id: pseoId, post_count: 6 } });
		expect(res.status).toBe(202);
		const id = res.body.generation_id;
		await eventually(async () => fake.heldChat() === 2, 30_000, 'two pages at the provider');
		expect(fake.releaseChat(1)).toBe(1);
		await eventually(
			async () => (await adminItems(run.api, 'pseo_generations', `filter[id][_eq]=${id}`))[0]?.created_count === 1,
			30_000,
			'one page stored',
		);
		await eventually(async () => fake.heldChat() === 2, 30_000, 'the next page at the provider');

		await expectCleanStop(run, () => process.kill(run.npm.pid!, 'SIGTERM'));
		expect(await run.exited).toEqual({ code: 0, signal: null });
		fake.configure({ holdChat: false });

		databases.delete(database); // the instance below disposes of it
		const next = await launchDirectus({ leg: 'sqlite', database, env });
		try {
			const job = await waitForJob(next, user, id, 20_000);
			expect(job).toMatchObject({ status: 'completed', created_count: 6 });
			const posts = await adminItems(next, 'pseo_posts', `filter[pseo_id][_eq]=${pseoId}`);
			expect(new Set(posts.map((post) => post.route)).size).toBe(6);
			expect(posts).toHaveLength(6);
		} finally {
			await next.dispose();
		}
	});

	it('1 SIGINT to the npm start process leaves no process of the service', async () => {
		const run = await npmStart({ database: await freshDatabase() });
		await expectCleanStop(run, () => process.kill(run.npm.pid!, 'SIGINT'));
		expect(await run.exited).toEqual({ code: 0, signal: null });
	});

	it('1 Ctrl-C (SIGINT to the whole foreground process group) leaves no process of the service', async () => {
		const run = await npmStart({ database: await freshDatabase(), ownGroup: true });
		await expectCleanStop(run, () => process.kill(-run.npm.pid!, 'SIGINT'));
		expect(await run.exited).toEqual({ code: 0, signal: null });
	});

	it('1 the service does not outlive a SIGKILLed npm start', async () => {
		const run = await npmStart({ database: await freshDatabase() });
		await expectCleanStop(run, () => process.kill(run.npm.pid!, 'SIGKILL'));
		expect(await run.exited).toEqual({ code: null, signal: 'SIGKILL' });
		expect(run.output()).toMatch(/is gone: stopping Directus/);
	});
});

async function answers(url: string): Promise<boolean> {
	try {
		return (await fetch(`${url}/server/ping`, { signal: AbortSignal.timeout(2000) })).ok;
	} catch {
		return false;
	}
}

/** `pid` and all its descendants, read from /proc, parents first. */
function processTree(pid: number): ProcessEntry[] {
	const entry = readProcess(pid);
	if (!entry) return [];
	const children = new Set<number>();
	let tasks: string[] = [];
	try {
		tasks = readdirSync(`/proc/${pid}/task`);
	} catch {
		// gone meanwhile
	}
	for (const task of tasks) {
		try {
			const list = readFileSync(`/proc/${pid}/task/${task}/children`, 'utf8').trim();
			for (const child of list.split(/\s+/).filter(Boolean)) children.add(Number(child));
		} catch {
			// thread or process gone meanwhile
		}
	}
	return [entry, ...[...children].flatMap(processTree)];
}

function readProcess(pid: number): ProcessEntry | null {
	const stat = readStat(pid);
	if (!stat || stat.state === 'Z') return null;
	let command = '';
	try {
		command = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').join(' ').trim();
	} catch {
		return null;
	}
	return { pid, startTime: stat.startTime, command };
}

/** State and start time from /proc/<pid>/stat; the command name in parentheses may itself hold spaces. */
function readStat(pid: number): { state: string; startTime: string } | null {
	try {
		const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
		const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
		// Fields after the command: state is field 3 of the file, starttime field 22.
		return { state: fields[0]!, startTime: fields[19]! };
	} catch {
		return null;
	}
}

/** Still running (a zombie has ended: it only waits for its parent to read its status). */
function isAlive(entry: ProcessEntry): boolean {
	const stat = readStat(entry.pid);
	return stat !== null && stat.state !== 'Z' && stat.startTime === entry.startTime;
}

function killQuietly(pid: number): void {
	try {
		process.kill(pid, 'SIGKILL');
	} catch {
		// already gone
	}
}
