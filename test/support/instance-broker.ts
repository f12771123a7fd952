/**
 * The Directus instances that suites share. A boot costs seconds of both cores, and most suites need nothing of
 * their Directus but its leg and a few settings: such a suite asks the broker (through `shareDirectus` in
 * directus.ts) for an instance of its leg and environment, and gets the one already running when an equal one was
 * asked for before, a fresh one otherwise. Each suite still makes its own users, websites and fake provider: the
 * instance's provider address is a tenant router (fake-provider/tenant-router.ts) that passes each suite's calls to
 * the suite's own fake, by the model its websites name.
 *
 * The broker runs in vitest's main process, started by the global set-up, and answers the test workers on loopback;
 * it stops every instance it started when the run ends. A suite that stops, kills, pauses or restarts its Directus,
 * or changes what every user of it sees (Settings → AI, metrics, a fault file), starts a private one instead.
 * Vitest-free.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { startTenantRouter, type TenantRouter } from './fake-provider/tenant-router.ts';
import { copyDatabase, launchDirectus, type DirectusInstance, type Leg } from './instance.ts';

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
	/** Set while nobody holds it: when it fires, the instance is stopped. */
	linger: NodeJS.Timeout | null;
}

/**
 * How long an instance nobody holds keeps running for the next suite that asks for it. Idle, an instance sweeps its
 * database five times a second (instance.ts), about two percent of a core; a boot costs about eight seconds of one.
 * Two minutes of idling cost less than a boot. (The sweep is not slowed on shared instances: a batch job moves on at
 * each sweep, and the suites on them waited for it.)
 */
const LINGER_MS = 120_000;

class Broker implements InstanceBroker {
	readonly #options: InstanceBrokerOptions;
	readonly #server: Server;
	readonly #logDir = mkdtempSync(path.join(os.tmpdir(), 'pseo-shared-'));
	/** By key; its promise is pending while the instance boots, so that two suites asking at once share one boot. */
	readonly #instances = new Map<string, Entry>();
	/** Instances being stopped: the run's end waits for them. */
	readonly #stopping = new Set<Promise<void>>();
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

	#acquire(leg: Leg, env: Record<string, string>): Promise<Shared> {
		const key = instanceKey(leg, env);
		let entry = this.#instances.get(key);
		if (!entry) {
			const shared = this.#boot(key, leg, env);
			entry = { shared, holders: 0, linger: null };
			// A boot that failed is not kept: the next suite to ask tries again, and reports its own failure.
			shared.catch(() => {
				if (this.#instances.get(key)?.shared === shared) this.#instances.delete(key);
			});
			this.#instances.set(key, entry);
		}
		entry.holders += 1;
		if (entry.linger) clearTimeout(entry.linger);
		entry.linger = null;
		return entry.shared;
	}

	/** A suite let its instance go: once nobody holds it, it lingers, then stops. */
	#release(key: string): void {
		const entry = this.#instances.get(key);
		if (!entry || entry.holders === 0) return;
		entry.holders -= 1;
		if (entry.holders === 0) entry.linger = setTimeout(() => this.#stop(key), LINGER_MS);
	}

	/** Forgets the instance at once (a suite that asks now gets a new one) and stops it. */
	#stop(key: string): void {
		const entry = this.#instances.get(key);
		if (!entry) return;
		this.#instances.delete(key);
		if (entry.linger) clearTimeout(entry.linger);
		const stopped = entry.shared
			.then(async ({ instance, router }) => {
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
		writeFileSync(logFile, '');
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
