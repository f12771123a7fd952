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
	/** How many instances it started. */
	started(): number;
	/** Stops every instance and router, and drops their databases. */
	close(): Promise<void>;
}

interface Shared {
	info: SharedInstanceInfo;
	router: TenantRouter;
	instance: DirectusInstance;
}

class Broker implements InstanceBroker {
	readonly #options: InstanceBrokerOptions;
	readonly #server: Server;
	readonly #logDir = mkdtempSync(path.join(os.tmpdir(), 'pseo-shared-'));
	/** By key; a promise while the instance boots, so that two suites asking at once share one boot. */
	readonly #instances = new Map<string, Promise<Shared>>();
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

	started(): number {
		return this.#instances.size;
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
		const all = await Promise.allSettled(this.#instances.values());
		await Promise.all(
			all.map(async (settled) => {
				if (settled.status !== 'fulfilled') return;
				await settled.value.instance.dispose();
				await settled.value.router.close();
			}),
		);
		rmSync(this.#logDir, { recursive: true, force: true });
	}

	async #handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
		const body = JSON.parse((await readBody(req)) || '{}') as Record<string, unknown>;
		if (req.method === 'POST' && req.url === '/instances') {
			const shared = await this.#acquire(body['leg'] as Leg, (body['env'] ?? {}) as Record<string, string>);
			return reply(res, 200, shared.info);
		}
		if (req.url === '/tenants' && (req.method === 'POST' || req.method === 'DELETE')) {
			const shared = await this.#instances.get(String(body['key']));
			if (!shared) return reply(res, 404, { error: `no shared instance ${String(body['key'])}` });
			if (req.method === 'POST') shared.router.register(String(body['model']), String(body['origin']));
			else shared.router.unregister(String(body['model']));
			return reply(res, 200, {});
		}
		reply(res, 404, { error: `${req.method} ${req.url}` });
	}

	#acquire(leg: Leg, env: Record<string, string>): Promise<Shared> {
		const key = instanceKey(leg, env);
		let shared = this.#instances.get(key);
		if (!shared) {
			shared = this.#boot(key, leg, env);
			// A boot that failed is not kept: the next suite to ask tries again, and reports its own failure.
			shared.catch(() => this.#instances.delete(key));
			this.#instances.set(key, shared);
		}
		return shared;
	}

	async #boot(key: string, leg: Leg, env: Record<string, string>): Promise<Shared> {
		const router = await startTenantRouter();
		const logFile = path.join(this.#logDir, `${++this.#boots}-${leg}.log`);
		writeFileSync(logFile, '');
		try {
			const database = await copyDatabase(leg, this.#options.templates[leg], this.#options.prefix);
			const instance = await launchDirectus({ leg, database, env: { ...env, OPENAI_BASE_URL: router.url }, logFile });
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
