/**
 * The Directus instances that suites share. A boot costs seconds of both cores, and most suites need nothing of
 * their Directus but its leg and a few settings: such a suite asks the broker (through `shareDirectus` in
 * directus.ts) for an instance of its leg and environment, and gets the one already running when an equal one was
 * asked for before, a fresh one otherwise. Each suite still makes its own users, websites and fake provider: the
 * instance's provider address is a tenant router (fake-provider/tenant-router.ts) that passes each suite's calls to
 * the suite's own fake, by the model its websites name.
 *
 * The broker runs in vitest's main process, started by the global set-up, and answers the test workers on loopback;
 * it stops every instance it started when the run ends. An instance that no suite holds is parked (SIGSTOP, 2.5 s
 * later) rather than stopped, and woken (SIGCONT) for the next suite that asks for it. A suite that stops, kills,
 * pauses or restarts its Directus, or changes what every user of it sees (Settings → AI, metrics, a fault file),
 * starts a private one instead.
 * Vitest-free.
 */
import { cpSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { startTenantRouter, type TenantRouter } from './fake-provider/tenant-router.ts';
import { copyDatabase, launchDirectus, type DirectusInstance, type Leg } from './instance.ts';
import { CACHE_DIR } from './paths.ts';

/** What a test worker needs of a shared instance. */
export interface SharedInstanceInfo {
	/** The instance's key: its leg and environment. */
	key: string;
	url: string;
	adminToken: string;
	/** Where the instance's output goes, for `output()` in the workers. */
	logFile: string;
}

export interface InstanceBrokerOptions {
	/** The template database of each leg (a file or a database name), as `copyDatabase` takes it. */
	templates: Record<Leg, string>;
	/** The name prefix of the database copies, which the global teardown drops. */
	prefix: string;
}

export interface InstanceBroker {
	/** The broker's own address, for the workers. */
	readonly url: string;
	/** Stops every instance and router, and drops their databases. */
	close(): Promise<void>;
}

interface Shared {
	info: SharedInstanceInfo;
	router: TenantRouter;
	instance: DirectusInstance;
}

/** A shared instance and how many suites hold it now. */
interface Entry {
	shared: Promise<Shared>;
	holders: number;
	/** Nobody holds it, and its processes are stopped (SIGSTOP) until a suite asks for it again. */
	parked: boolean;
	/** Nobody holds it, and it is parked when this fires. */
	parkTimer?: NodeJS.Timeout;
}

/**
 * How many instances nobody holds are kept parked; past it, the one parked longest is stopped. Idle, an instance sweeps
 * its database five times a second (instance.ts): five percent of a core on a slow machine, which a dozen instances
 * left running would cost the run. Stopped, it would cost a boot (seven seconds of a core) at the next suite that asks
 * for it, and the suites that share an environment are not always run one after the other. Parked, it costs neither,
 * only its memory (about 400 MB; the run's distinct environments are fewer than this bound).
 */
const PARKED_MAX = 20;

/**
 * How long an instance nobody holds runs on before it is parked: long enough for its idle database connections to
 * be let go (a second idle, checked every second: POOL_ENV in instance.ts). A stopped process keeps its connections
 * open, and PostgreSQL has 100 for the whole run.
 */
const PARK_DELAY_MS = 2500;

/** Where the shared instances' logs of the last run are kept, one file per instance (`<boot>-<leg>.log`). */
const SHARED_LOGS = path.join(CACHE_DIR, 'shared-instances');

class Broker implements InstanceBroker {
	readonly #options: InstanceBrokerOptions;
	readonly #server: Server;
	readonly #logDir = mkdtempSync(path.join(os.tmpdir(), 'pseo-shared-'));
	/** By key; its promise is pending while the instance boots, so that two suites asking at once share one boot. */
	readonly #instances = new Map<string, Entry>();
	/** Instances being stopped: the run's end waits for them. */
	readonly #stopping = new Set<Promise<void>>();
	/** The keys of the instances nobody holds, in the order they were let go. */
	readonly #parking = new Set<string>();
	#boots = 0;
	#url = '';

	constructor(options: InstanceBrokerOptions) {
		this.#options = options;
		this.#server = createServer((req, res) => {
			this.#handle(req, res).catch((error: unknown) => reply(res, 500, { error: error instanceof Error ? error.message : String(error) }));
		});
	}

	get url(): string {
		return this.#url;
	}

	async listen(): Promise<void> {
		await new Promise<void>((resolve) => this.#server.listen(0, '127.0.0.1', () => resolve()));
		this.#url = `http://127.0.0.1:${(this.#server.address() as AddressInfo).port}`;
	}

	async close(): Promise<void> {
		await new Promise<void>((resolve) => {
			this.#server.close(() => resolve());
			this.#server.closeAllConnections();
		});
		for (const key of [...this.#instances.keys()]) this.#stop(key);
		await Promise.all(this.#stopping);
		// Kept until the next run: a suite that failed on a shared instance printed its output while the run went on,
		// but the instance's whole log, other suites' requests beside it, is what a flaky failure is read from.
		rmSync(SHARED_LOGS, { recursive: true, force: true });
		cpSync(this.#logDir, SHARED_LOGS, { recursive: true });
		rmSync(this.#logDir, { recursive: true, force: true });
	}

	async #handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
		const body = JSON.parse((await readBody(req)) || '{}') as Record<string, unknown>;
		if (req.method === 'POST' && req.url === '/instances') {
			const shared = await this.#acquire(body['leg'] as Leg, (body['env'] ?? {}) as Record<string, string>);
			return reply(res, 200, shared.info);
		}
		if (req.method === 'POST' && req.url === '/release') {
			this.#release(String(body['key']));
			return reply(res, 200, {});
		}
		if (req.url === '/tenants' && (req.method === 'POST' || req.method === 'DELETE')) {
			const shared = await this.#instances.get(String(body['key']))?.shared;
			if (!shared) return reply(res, 404, { error: `no shared instance ${String(body['key'])}` });
			if (req.method === 'POST') shared.router.register(String(body['model']), String(body['origin']));
			else shared.router.unregister(String(body['model']));
			return reply(res, 200, {});
		}
		reply(res, 404, { error: `${req.method} ${req.url}` });
	}

	async #acquire(leg: Leg, env: Record<string, string>): Promise<Shared> {
		const key = instanceKey(leg, env);
		let entry = this.#instances.get(key);
		if (!entry) {
			const shared = this.#boot(key, leg, env);
			entry = { shared, holders: 0, parked: false };
			// A boot that failed is not kept: the next suite to ask tries again, and reports its own failure.
			shared.catch(() => {
				if (this.#instances.get(key)?.shared === shared) this.#instances.delete(key);
			});
			this.#instances.set(key, entry);
		}
		entry.holders += 1;
		clearTimeout(entry.parkTimer);
		this.#parking.delete(key);
		const shared = await entry.shared;
		if (entry.parked) {
			shared.instance.resume();
			entry.parked = false;
		}
		return shared;
	}

	/** A suite let its instance go: once nobody holds it, it is parked for the next suite that asks for it. */
	#release(key: string): void {
		const entry = this.#instances.get(key);
		if (!entry || entry.holders === 0) return;
		entry.holders -= 1;
		if (entry.holders > 0) return;
		entry.parkTimer = setTimeout(() => {
			void entry.shared.then(({ instance }) => {
				// Asked for again, or stopped, while its boot was being awaited.
				if (entry.holders > 0 || this.#instances.get(key) !== entry) return;
				instance.pause();
				entry.parked = true;
			}, () => {});
		}, PARK_DELAY_MS);
		entry.parkTimer.unref();
		this.#parking.add(key);
		// The set keeps the order of parking: its first key was parked longest.
		if (this.#parking.size > PARKED_MAX) this.#stop(this.#parking.values().next().value!);
	}

	/** Forgets the instance at once (a suite that asks now gets a new one) and stops it. */
	#stop(key: string): void {
		const entry = this.#instances.get(key);
		if (!entry) return;
		this.#instances.delete(key);
		this.#parking.delete(key);
		clearTimeout(entry.parkTimer);
		const stopped = entry.shared
			.then(async ({ instance, router }) => {
				// A stopped process would hold SIGTERM until woken.
				if (entry.parked) instance.resume();
				await instance.dispose();
				await router.close();
			})
			.catch(() => {})
			.finally(() => this.#stopping.delete(stopped));
		this.#stopping.add(stopped);
	}

	async #boot(key: string, leg: Leg, env: Record<string, string>): Promise<Shared> {
		const router = await startTenantRouter();
		const logFile = path.join(this.#logDir, `${++this.#boots}-${leg}.log`);
		// Its first line says which instance it is: the suites that shared it are found by its environment.
		writeFileSync(logFile, `shared instance ${key}\n`);
		try {
			const database = await copyDatabase(leg, this.#options.templates[leg], this.#options.prefix);
			// The router speaks every vendor's protocol: an instance whose environment gives an Anthropic or Gemini key
			// reaches the suites' fakes through it too (both SDKs take the address without /v1).
			const root = router.url.replace(/\/v1$/, '');
			const instance = await launchDirectus({ leg, database, env: { ...env, OPENAI_BASE_URL: router.url, ANTHROPIC_BASE_URL: root, GOOGLE_GEMINI_BASE_URL: root }, logFile });
			return { info: { key, url: instance.url, adminToken: instance.adminToken, logFile }, router, instance };
		} catch (error) {
			await router.close();
			throw error;
		}
	}
}

/** Equal legs and environments give equal keys, whatever the order of the variables. */
function instanceKey(leg: Leg, env: Record<string, string>): string {
	const sorted = Object.keys(env)
		.sort()
		.map((name) => [name, env[name]]);
	return `${leg} ${JSON.stringify(sorted)}`;
}

function readBody(req: IncomingMessage): Promise<string> {
	return new Promise((resolve, reject) => {
		let text = '';
		req.on('data', (chunk: Buffer) => (text += chunk.toString()));
		req.on('end', () => resolve(text));
		req.on('error', reject);
	});
}

function reply(res: ServerResponse, status: number, body: unknown): void {
	if (res.headersSent) return void res.destroy();
	res.writeHead(status, { 'content-type': 'application/json' });
	res.end(JSON.stringify(body));
}

export async function startInstanceBroker(options: InstanceBrokerOptions): Promise<InstanceBroker> {
	const broker = new Broker(options);
	await broker.listen();
	return broker;
}
