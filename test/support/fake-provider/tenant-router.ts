/**
 * One provider address in front of several fakes: the provider of a Directus that several suites share
 * (test/support/instance-broker.ts). Each suite runs a fake of its own, in its own process, and registers it here
 * under a model name that only its websites use; the router passes each request to the fake of the model it
 * names, so that a suite's counters, knobs and held calls never see another suite's pages.
 *
 * What names the model:
 * - Gemini's paths (`/v1beta/models/{model}:generateContent`, `:batchGenerateContent`);
 * - the body of a chat completion, an Anthropic message or message batch, and the JSON Lines of a batch input file
 *   (`"model": "..."`, found in the raw body, multipart uploads included);
 * - for the calls that name none (a batch's retrieve, cancel and results, a file's content), the id of a file or
 *   batch that a fake created: the router learns them from the fakes' answers.
 *
 * A request for a model nobody registered is answered as OpenAI answers an unknown model (404 `model_not_found`),
 * so a suite that forgot to give its websites its model fails loudly instead of reading another suite's calls.
 * A list (`GET /v1/files`, `/v1/batches`, `/v1/messages/batches`, `/v1beta/batches`) is the account's: the first
 * page of every fake, joined. Paging across fakes is not supported; the suites that test lookups in long lists run
 * their own Directus and fake. Gemini's Files API is not routed either (nothing in an upload's start names a model,
 * so it is answered 404): the suites that run Gemini bulk jobs run their own Directus and fake too.
 */
import { createServer, request as httpRequest } from 'node:http';
import type { IncomingHttpHeaders, IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface TenantRouter {
	/** The OpenAI-style base URL, ending in `/v1`, for a Directus's `OPENAI_BASE_URL`. */
	readonly url: string;
	/** Sends the requests that name `model` (and the files and batches they create) to the fake at `origin`. */
	register(model: string, origin: string): void;
	/** Forgets a model; its requests are then answered 404. */
	unregister(model: string): void;
	close(): Promise<void>;
}

const LISTS: Record<string, 'data' | 'operations'> = {
	'/v1/files': 'data',
	'/v1/batches': 'data',
	'/v1/messages/batches': 'data',
	'/v1beta/batches': 'operations',
};

/** Ids in a path: a file's or a batch's, at each protocol's place for them. */
const PATH_ID = /^\/(?:v1\/files|v1\/batches|v1\/messages\/batches|v1beta\/batches)\/([A-Za-z0-9_-]+)/;
const PATH_MODEL = /\/models\/([^/:]+):/;
const BODY_MODEL = /"model"\s*:\s*"([^"]+)"/;
const BODY_FILE = /"input_file_id"\s*:\s*"([^"]+)"/;
/** Fields of an answer that name something a later call may ask for by id. */
const ID_FIELDS = ['id', 'name', 'input_file_id', 'output_file_id', 'error_file_id'] as const;
/** Answers larger than this are not read for ids: they are downloads, not the objects that name them. */
const MAX_LEARNED_BODY = 4 * 1024 * 1024;

class Router implements TenantRouter {
	readonly #server: Server;
	#url = '';
	/** Model → origin of its fake. */
	readonly #tenants = new Map<string, string>();
	/** File or batch id → model of the fake that made it. */
	readonly #owners = new Map<string, string>();

	constructor() {
		this.#server = createServer((req, res) => {
			void this.#handle(req, res).catch((error: unknown) => {
				if (!res.headersSent) answer(res, 502, { error: { message: `tenant router: ${String(error)}`, type: 'server_error' } });
				else res.destroy();
			});
		});
		// Held calls are a test's point: no timeout of Node's may cut them.
		this.#server.requestTimeout = 0;
		this.#server.headersTimeout = 0;
	}

	get url(): string {
		return this.#url;
	}

	async listen(): Promise<void> {
		await new Promise<void>((resolve, reject) => {
			this.#server.once('error', reject);
			this.#server.listen(0, '127.0.0.1', () => resolve());
		});
		this.#url = `http://127.0.0.1:${(this.#server.address() as AddressInfo).port}/v1`;
	}

	register(model: string, origin: string): void {
		this.#tenants.set(model, origin.replace(/\/v1\/?$/, ''));
	}

	unregister(model: string): void {
		this.#tenants.delete(model);
		for (const [id, owner] of this.#owners) if (owner === model) this.#owners.delete(id);
	}

	async close(): Promise<void> {
		await new Promise<void>((resolve) => {
			this.#server.close(() => resolve());
			this.#server.closeAllConnections();
		});
	}

	async #handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
		const body = await readAll(req);
		const url = new URL(req.url ?? '/', 'http://router');
		const path = url.pathname.replace(/\/+$/, '') || '/';
		const list = req.method === 'GET' ? LISTS[path] : undefined;
		if (list) return this.#list(req, res, list);
		const model = this.#modelOf(path, body);
		const origin = model === null ? undefined : this.#tenants.get(model);
		if (origin === undefined) {
			const message = model === null ? `No suite's fake made what ${req.method} ${path} names.` : `The model \`${model}\` does not exist or you do not have access to it.`;
			return answer(res, 404, { error: { message, type: 'invalid_request_error', param: null, code: model === null ? 'not_found' : 'model_not_found' } });
		}
		this.#forward(req, res, body, `${origin}${req.url ?? '/'}`, model!);
	}

	#modelOf(path: string, body: Buffer): string | null {
		const named = PATH_MODEL.exec(path)?.[1];
		if (named) return decodeURIComponent(named);
		const text = body.length > 0 ? body.toString('utf8') : '';
		const inBody = BODY_MODEL.exec(text)?.[1];
		if (inBody) return inBody;
		const id = PATH_ID.exec(path)?.[1] ?? BODY_FILE.exec(text)?.[1];
		return id === undefined ? null : (this.#owners.get(id) ?? null);
	}

	/** Passes the request on, streams the answer back, and learns the ids a JSON answer names. */
	#forward(req: IncomingMessage, res: ServerResponse, body: Buffer, target: string, model: string): void {
		const upstream = httpRequest(target, { method: req.method, headers: forwardedHeaders(req.headers, body.length) }, (reply) => {
			res.writeHead(reply.statusCode ?? 502, withoutHopHeaders(reply.headers));
			const json = /json/.test(String(reply.headers['content-type'] ?? ''));
			const chunks: Buffer[] = [];
			let size = 0;
			reply.on('data', (chunk: Buffer) => {
				if (json && size <= MAX_LEARNED_BODY) chunks.push(chunk);
				size += chunk.length;
			});
			reply.on('end', () => {
				if (json && size <= MAX_LEARNED_BODY) this.#learn(Buffer.concat(chunks), model);
			});
			reply.on('error', () => res.destroy());
			reply.pipe(res);
		});
		upstream.on('error', () => {
			if (!res.headersSent) answer(res, 502, { error: { message: 'the suite\'s fake went away', type: 'server_error' } });
			else res.destroy();
		});
		// The client gave up (a timeout, a killed Directus): the fake must see it go too, as it would without us.
		res.on('close', () => {
			if (!res.writableFinished) upstream.destroy();
		});
		upstream.end(body);
	}

	#learn(raw: Buffer, model: string): void {
		let parsed: unknown;
		try {
			parsed = JSON.parse(raw.toString('utf8'));
		} catch {
			return;
		}
		const objects = Array.isArray((parsed as { data?: unknown })?.data) ? (parsed as { data: unknown[] }).data : [parsed];
		for (const object of objects) {
			if (typeof object !== 'object' || object === null) continue;
			for (const field of ID_FIELDS) {
				const value = (object as Record<string, unknown>)[field];
				if (typeof value === 'string' && value !== '') this.#owners.set(value.replace(/^batches\//, ''), model);
			}
		}
	}

	/** The account's list: the first page of each fake, joined. */
	async #list(req: IncomingMessage, res: ServerResponse, field: 'data' | 'operations'): Promise<void> {
		const pages = await Promise.all(
			[...this.#tenants].map(async ([model, origin]) => {
				const reply = await fetch(`${origin}${req.url ?? '/'}`, { headers: withoutHopHeaders(req.headers) as Record<string, string> });
				const page = (await reply.json()) as Record<string, unknown>;
				if (!reply.ok) throw new Error(`${origin} answered ${reply.status}: ${JSON.stringify(page)}`);
				const items = Array.isArray(page[field]) ? (page[field] as unknown[]) : [];
				this.#learn(Buffer.from(JSON.stringify({ data: items })), model);
				return items;
			}),
		);
		const items = pages.flat();
		if (field === 'operations') return answer(res, 200, { operations: items });
		const ids = items.map((item) => (item as { id?: string }).id ?? null);
		answer(res, 200, { object: 'list', data: items, first_id: ids[0] ?? null, last_id: ids.at(-1) ?? null, has_more: false });
	}
}

function readAll(req: IncomingMessage): Promise<Buffer> {
	return new Promise((resolve, reject) => {
		const chunks: Buffer[] = [];
		req.on('data', (chunk: Buffer) => chunks.push(chunk));
		req.on('end', () => resolve(Buffer.concat(chunks)));
		req.on('error', reject);
	});
}

const HOP_HEADERS = new Set(['connection', 'keep-alive', 'transfer-encoding', 'host', 'content-length']);

function withoutHopHeaders(headers: IncomingHttpHeaders): IncomingHttpHeaders {
	return Object.fromEntries(Object.entries(headers).filter(([name]) => !HOP_HEADERS.has(name)));
}

function forwardedHeaders(headers: IncomingHttpHeaders, length: number): IncomingHttpHeaders {
	return { ...withoutHopHeaders(headers), 'content-length': String(length) };
}

function answer(res: ServerResponse, status: number, body: unknown): void {
	const text = JSON.stringify(body);
	res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
	res.end(text);
}

/** Starts a router on a free loopback port. */
export async function startTenantRouter(): Promise<TenantRouter> {
	const router = new Router();
	await router.listen();
	return router;
}
