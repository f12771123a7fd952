/**
 * An OpenAI-compatible HTTP server for tests and benchmarks: chat completions that honour json_schema, files,
 * batches with a status progression, fault injection, a request log, and admin routes under `/_fake/` so another
 * process can drive it. It speaks the Anthropic protocol too, under `/v1/messages`: messages and message batches
 * answered by the same responders and faults (anthropic-messages.ts, anthropic-batches.ts), and the Gemini API's
 * `generateContent` under `/v1beta/models` (google-generate.ts), its Files API (google-files.ts) and its Batch API
 * (`:batchGenerateContent`, `/v1beta/batches`: google-batches.ts). When configured, it enforces the vendors' capacity
 * limits as each vendor does (limits.ts): an enqueued-token limit on batches and a request-rate window on online calls.
 */
import { createServer } from 'node:http';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { AnthropicBatchStore, MAX_BATCH_BODY_BYTES } from './anthropic-batches.ts';
import { anthropicErrorBody, answerMessage, isAnthropicPath, parseMessagesRequest, usageForLog } from './anthropic-messages.ts';
import { BatchStore } from './batches.ts';
import { answerChat, apiError, newId, parseChatRequest } from './chat.ts';
import type { ChatRequest, ChatState } from './chat.ts';
import { configToJson, defaultConfig, mergeConfig } from './config.ts';
import type { FakeConfig, FakeConfigPatch } from './config.ts';
import { FileStore } from './files.ts';
import { GoogleBatchStore, INLINE_BATCH_TOO_LARGE, MAX_INLINE_BATCH_BYTES } from './google-batches.ts';
import { GOOGLE_FILE_ID, GoogleFileStore } from './google-files.ts';
import {
	answerGenerateContent,
	BATCH_GENERATE_CONTENT_PATH,
	GENERATE_CONTENT_PATH,
	generateUsageForLog,
	googleErrorBody,
	isGooglePath,
	MISSING_KEY_MESSAGE,
	parseGenerateContentRequest,
} from './google-generate.ts';
import { HttpError, readBody, readJson, sendChunks, sendError, sendJson } from './http.ts';
import { LimitRefusal, ProviderLimits } from './limits.ts';
import type { LimitProtocol } from './limits.ts';
import { countBatchedRoute, countBatchesCreated, countChat } from './request-log.ts';
import type { RequestLogEntry } from './request-log.ts';

export type { FakeConfigPatch } from './config.ts';
export type { RequestLogEntry } from './request-log.ts';

export interface FakeProviderOptions {
	/** Port to listen on; 0 picks a free one. Default 0. */
	port?: number;
	/** Address to listen on. Default '127.0.0.1'. */
	host?: string;
}

export interface FakeProvider {
	/**
	 * Base URL for the OpenAI SDK's `baseURL`, ending in `/v1`; the Anthropic SDK takes it without the `/v1`, and so
	 * does the Gemini SDK's `httpOptions.baseUrl` (it adds `/v1beta` itself).
	 */
	readonly url: string;
	/** The live request log of the `/v1` and `/v1beta` APIs, oldest first (cleared in place by `reset`). */
	readonly requests: RequestLogEntry[];
	/** The current knobs. */
	readonly config: Readonly<FakeConfig>;
	/** Applies a partial config; each given field replaces the old one. Throws TypeError on a bad value. */
	configure(patch: FakeConfigPatch): void;
	/** Back to defaults: config, log, files, batches (of every protocol) and attempt counters. */
	reset(): void;
	/** Lets every batch held by `holdBatches` move on at its next retrieve. */
	releaseBatches(): void;
	/**
	 * Lets the chat calls held by `holdChat` go on, oldest first: all of them, or the `count` oldest. Returns how
	 * many it let go.
	 */
	releaseChat(count?: number): number;
	/** Chat calls waiting for `releaseChat()`. */
	heldChat(): number;
	/** Lets the downloads held by `holdFileAfterLines` finish, oldest first: all, or the `count` oldest. */
	releaseFiles(count?: number): number;
	/** Downloads waiting for `releaseFiles()`. */
	heldFiles(): number;
	/** Lets the batch creates held by `holdBatchCreates` go on, oldest first: all, or the `count` oldest. */
	releaseBatchCreates(count?: number): number;
	/** Batch creates waiting for `releaseBatchCreates()`. */
	heldBatchCreates(): number;
	close(): Promise<void>;
	/** Chat-completion, Anthropic message and Gemini generateContent requests received, optionally for one route. */
	countChat(route?: string): number;
	/** Batches created successfully, of any protocol. */
	countBatchesCreated(): number;
	/** Times a route was submitted in created batches. */
	countBatchedRoute(route: string): number;
	/**
	 * Input tokens of the batches not yet ended, of every protocol (`estimateInputTokens` of limits.ts per request),
	 * counted whether or not `enqueuedTokenLimit` is set.
	 */
	enqueuedTokens(): number;
	/** The most input tokens ever enqueued at once since the last `reset()`. */
	maxEnqueuedTokens(): number;
	/** Batches refused (Anthropic, Gemini: 429) or failed (OpenAI: `token_limit_exceeded`) for `enqueuedTokenLimit`. */
	capacityRefusals(): number;
	/** Valid online calls the `requestRate` window let through (all of them when it is off), of one protocol or all. */
	rateAdmitted(protocol?: LimitProtocol): number;
	/** Online calls the `requestRate` window answered 429, of one protocol or all. */
	rateLimited(protocol?: LimitProtocol): number;
}

interface RouteContext {
	req: IncomingMessage;
	res: ServerResponse;
	params: string[];
	query: URLSearchParams;
	entry: RequestLogEntry | null;
}

type Handler = (context: RouteContext) => Promise<void> | void;

interface Route {
	method: string;
	pattern: RegExp;
	handler: Handler;
}

const ID = '([A-Za-z0-9_-]+)';

function notFound(method: string, path: string): HttpError {
	return new HttpError(404, apiError(`Invalid URL (${method} ${path})`));
}

/** Headers the SDKs send themselves, or that carry the key (recorded as `apiKey`): not worth logging as extra. */
const SDK_HEADERS = new Set(['x-api-key', 'x-goog-api-key', 'x-goog-api-client', 'x-server-timeout']);

/** The Gemini API's key: the `x-goog-api-key` header, or the `key` query parameter; null when neither is set. */
function googleKeyOf(req: IncomingMessage, query: URLSearchParams): string | null {
	const header = req.headers['x-goog-api-key'];
	if (typeof header === 'string' && header.trim() !== '') return header;
	const param = query.get('key');
	return param !== null && param.trim() !== '' ? param : null;
}

/**
 * Who called: the key (OpenAI's `Authorization: Bearer`, Anthropic's `x-api-key`, or Google's `x-goog-api-key`),
 * and the `x-*` headers that the SDKs do not send themselves (`x-stainless-*`, {@link SDK_HEADERS}).
 */
function callerOf(req: IncomingMessage, query: URLSearchParams): Pick<RequestLogEntry, 'apiKey' | 'extraHeaders'> {
	const anthropicKey = req.headers['x-api-key'];
	const key =
		/^Bearer\s+(\S+)/i.exec(req.headers.authorization ?? '')?.[1] ??
		(typeof anthropicKey === 'string' && anthropicKey !== '' ? anthropicKey : null) ??
		googleKeyOf(req, query);
	const extraHeaders: Record<string, string> = {};
	for (const [name, value] of Object.entries(req.headers)) {
		if (name.startsWith('x-') && !name.startsWith('x-stainless-') && !SDK_HEADERS.has(name) && typeof value === 'string') extraHeaders[name] = value;
	}
	return { apiKey: key, extraHeaders };
}

/**
 * A bearer token, or on the Anthropic routes an `x-api-key` as well: the Anthropic API takes either, and
 * `@anthropic-ai/sdk` 1.x sends its `apiKey` as `Authorization: Bearer`.
 */
function isAuthorized(req: IncomingMessage, anthropic: boolean): boolean {
	const key = req.headers['x-api-key'];
	if (anthropic && typeof key === 'string' && key.trim() !== '') return true;
	const header = req.headers.authorization ?? '';
	return /^Bearer\s+\S+/i.test(header);
}

/** Waits `ms`, or less if the client goes away first; true when the client is still there. */
function wait(res: ServerResponse, ms: number): Promise<boolean> {
	return new Promise((resolve) => {
		const done = (): void => {
			clearTimeout(timer);
			res.off('close', done);
			resolve(!res.destroyed);
		};
		const timer = setTimeout(done, ms);
		res.on('close', done);
	});
}

/** Waits until the release function it adds to `held` is called (true), or the client goes away (false). */
function holdUntilReleased(held: Set<() => void>, res: ServerResponse): Promise<boolean> {
	return new Promise((resolve) => {
		const release = (): void => {
			res.off('close', gone);
			held.delete(release);
			resolve(true);
		};
		const gone = (): void => {
			held.delete(release);
			resolve(false);
		};
		held.add(release);
		res.on('close', gone);
	});
}

/** Calls the `count` oldest release functions of `held` (a Set keeps insertion order), or all of them. */
function releaseOldest(held: Set<() => void>, count = held.size): number {
	const oldest = [...held].slice(0, Math.max(0, count));
	for (const release of oldest) release();
	return oldest.length;
}

class FakeProviderServer implements FakeProvider {
	#server: Server;
	#url = '';
	#config: FakeConfig = defaultConfig();
	/** Chat calls held by `holdChat`, each with the function that lets it go on. */
	readonly #heldChat = new Set<() => void>();
	/** Downloads held by `holdFileAfterLines`, the same way. */
	readonly #heldFiles = new Set<() => void>();
	/** Batch creates held by `holdBatchCreates`, the same way. */
	readonly #heldCreates = new Set<() => void>();
	#log: RequestLogEntry[] = [];
	#attempts = new Map<string, number>();
	#files = new FileStore();
	#batches: BatchStore;
	#messageBatches: AnthropicBatchStore;
	#googleBatches: GoogleBatchStore;
	#googleFiles: GoogleFileStore;
	/** The account's enqueued-token ledger and request-rate window (`enqueuedTokenLimit`, `requestRate`). */
	readonly #limits = new ProviderLimits(() => this.#config);
	#routes: Route[];

	constructor() {
		this.#batches = new BatchStore({
			files: this.#files,
			config: () => this.#config,
			answer: (request, customId) => answerChat(request, this.#chatState(), customId),
			admit: (batch, lines) => this.#limits.enqueueOpenAiBatch(batch, lines),
		});
		this.#messageBatches = new AnthropicBatchStore({
			config: () => this.#config,
			resultsUrl: (id) => `${this.#url}/messages/batches/${id}/results`,
			answer: (request, customId) => answerMessage(request, this.#chatState(), customId),
			admit: (batch, lines) => this.#limits.enqueueMessageBatch(batch, lines),
		});
		this.#googleFiles = new GoogleFileStore({ origin: () => this.#url.replace(/\/v1$/, ''), uploadAgeS: () => this.#config.uploadAgeS });
		this.#googleBatches = new GoogleBatchStore({
			config: () => this.#config,
			files: this.#googleFiles,
			answer: (request, key) => answerGenerateContent(request, this.#chatState(), key),
			admit: (operation, lines) => this.#limits.enqueueGoogleBatch(operation, lines),
		});
		this.#routes = [
			{ method: 'POST', pattern: /^\/v1\/chat\/completions$/, handler: (c) => this.#chat(c) },
			{ method: 'POST', pattern: /^\/v1\/files$/, handler: (c) => this.#uploadFile(c) },
			{
				method: 'GET',
				pattern: /^\/v1\/files$/,
				handler: ({ res, query }) => {
					const purpose = query.get('purpose');
					sendJson(res, 200, { object: 'list', data: this.#files.list().filter((file) => !purpose || file.purpose === purpose), has_more: false });
				},
			},
			{ method: 'GET', pattern: new RegExp(`^/v1/files/${ID}$`), handler: (c) => this.#getFile(c) },
			{ method: 'DELETE', pattern: new RegExp(`^/v1/files/${ID}$`), handler: (c) => this.#deleteFile(c) },
			{ method: 'GET', pattern: new RegExp(`^/v1/files/${ID}/content$`), handler: (c) => this.#fileContent(c) },
			{ method: 'POST', pattern: /^\/v1\/batches$/, handler: (c) => this.#createBatch(c) },
			{ method: 'GET', pattern: /^\/v1\/batches$/, handler: (c) => this.#listBatches(c) },
			{ method: 'GET', pattern: new RegExp(`^/v1/batches/${ID}$`), handler: (c) => this.#retrieveBatch(c) },
			{ method: 'POST', pattern: new RegExp(`^/v1/batches/${ID}/cancel$`), handler: (c) => this.#cancelBatch(c) },
			{ method: 'POST', pattern: /^\/v1\/messages$/, handler: (c) => this.#message(c) },
			{ method: 'POST', pattern: /^\/v1\/messages\/batches$/, handler: (c) => this.#createMessageBatch(c) },
			{ method: 'GET', pattern: /^\/v1\/messages\/batches$/, handler: (c) => this.#listMessageBatches(c) },
			{ method: 'GET', pattern: new RegExp(`^/v1/messages/batches/${ID}$`), handler: (c) => this.#retrieveMessageBatch(c) },
			{ method: 'DELETE', pattern: new RegExp(`^/v1/messages/batches/${ID}$`), handler: (c) => this.#deleteMessageBatch(c) },
			{ method: 'POST', pattern: new RegExp(`^/v1/messages/batches/${ID}/cancel$`), handler: (c) => this.#cancelMessageBatch(c) },
			{ method: 'GET', pattern: new RegExp(`^/v1/messages/batches/${ID}/results$`), handler: (c) => this.#messageBatchResults(c) },
			{ method: 'POST', pattern: GENERATE_CONTENT_PATH, handler: (c) => this.#generateContent(c) },
			{ method: 'POST', pattern: BATCH_GENERATE_CONTENT_PATH, handler: (c) => this.#createGoogleBatch(c) },
			{ method: 'GET', pattern: /^\/v1beta\/batches$/, handler: (c) => this.#listGoogleBatches(c) },
			{ method: 'GET', pattern: new RegExp(`^/v1beta/batches/${ID}$`), handler: (c) => this.#getGoogleBatch(c) },
			{ method: 'POST', pattern: new RegExp(`^/v1beta/batches/${ID}:cancel$`), handler: (c) => this.#cancelGoogleBatch(c) },
			{ method: 'DELETE', pattern: new RegExp(`^/v1beta/batches/${ID}$`), handler: (c) => this.#deleteGoogleBatch(c) },
			{ method: 'POST', pattern: /^\/upload\/v1beta\/files$/, handler: (c) => this.#uploadGoogleFile(c) },
			{ method: 'GET', pattern: /^\/v1beta\/files$/, handler: (c) => this.#listGoogleFiles(c) },
			{ method: 'GET', pattern: new RegExp(`^/v1beta/files/(${GOOGLE_FILE_ID})$`), handler: (c) => this.#getGoogleFile(c) },
			{ method: 'DELETE', pattern: new RegExp(`^/v1beta/files/(${GOOGLE_FILE_ID})$`), handler: (c) => this.#deleteGoogleFile(c) },
			{ method: 'GET', pattern: new RegExp(`^(?:/download)?/v1beta/files/(${GOOGLE_FILE_ID}):download$`), handler: (c) => this.#downloadGoogleFile(c) },
			{ method: 'GET', pattern: /^\/_fake\/requests$/, handler: ({ res }) => sendJson(res, 200, this.#log) },
			{ method: 'GET', pattern: /^\/_fake\/limits$/, handler: ({ res }) => sendJson(res, 200, this.#limitCounters()) },
			{ method: 'GET', pattern: /^\/_fake\/config$/, handler: ({ res }) => sendJson(res, 200, configToJson(this.#config)) },
			{ method: 'POST', pattern: /^\/_fake\/config$/, handler: (c) => this.#adminConfigure(c) },
			{
				method: 'POST',
				pattern: /^\/_fake\/reset$/,
				handler: ({ res }) => {
					this.reset();
					sendJson(res, 200, { ok: true });
				},
			},
			{
				method: 'POST',
				pattern: /^\/_fake\/release-batches$/,
				handler: ({ res }) => sendJson(res, 200, { ok: true, released: this.#batches.release() + this.#messageBatches.release() + this.#googleBatches.release() }),
			},
		];
		this.#server = createServer((req, res) => {
			void this.#handle(req, res);
		});
		// Hung and slow answers are the point here, so Node's own request timeout must not cut them.
		this.#server.requestTimeout = 0;
		this.#server.headersTimeout = 0;
	}

	get url(): string {
		return this.#url;
	}

	get requests(): RequestLogEntry[] {
		return this.#log;
	}

	get config(): Readonly<FakeConfig> {
		return this.#config;
	}

	async listen(port: number, host: string): Promise<void> {
		await new Promise<void>((resolve, reject) => {
			this.#server.once('error', reject);
			this.#server.listen(port, host, () => {
				this.#server.off('error', reject);
				resolve();
			});
		});
		const address = this.#server.address() as AddressInfo;
		const shownHost = address.address.includes(':') ? `[${address.address}]` : address.address;
		this.#url = `http://${shownHost}:${address.port}/v1`;
	}

	configure(patch: FakeConfigPatch): void {
		this.#config = mergeConfig(this.#config, patch);
		// "Fail the first N attempts" counts from the moment the failing routes are (re)configured.
		if ('failRoutes' in patch || 'failRoutesTimes' in patch) this.#attempts.clear();
	}

	reset(): void {
		this.releaseChat();
		this.releaseFiles();
		this.releaseBatchCreates();
		this.#config = defaultConfig();
		this.#log.length = 0;
		this.#attempts.clear();
		this.#files.clear();
		this.#batches.clear();
		this.#messageBatches.clear();
		this.#googleBatches.clear();
		this.#googleFiles.clear();
		this.#limits.clear();
	}

	releaseBatches(): void {
		this.#batches.release();
		this.#messageBatches.release();
		this.#googleBatches.release();
	}

	releaseChat(count?: number): number {
		return releaseOldest(this.#heldChat, count);
	}

	heldChat(): number {
		return this.#heldChat.size;
	}

	releaseFiles(count?: number): number {
		return releaseOldest(this.#heldFiles, count);
	}

	heldFiles(): number {
		return this.#heldFiles.size;
	}

	releaseBatchCreates(count?: number): number {
		return releaseOldest(this.#heldCreates, count);
	}

	heldBatchCreates(): number {
		return this.#heldCreates.size;
	}

	async close(): Promise<void> {
		await new Promise<void>((resolve) => {
			this.#server.close(() => resolve());
			this.#server.closeAllConnections();
		});
	}

	countChat(route?: string): number {
		return countChat(this.#log, route);
	}

	countBatchesCreated(): number {
		return countBatchesCreated(this.#log);
	}

	countBatchedRoute(route: string): number {
		return countBatchedRoute(this.#log, route);
	}

	enqueuedTokens(): number {
		return this.#limits.enqueuedTokens();
	}

	maxEnqueuedTokens(): number {
		return this.#limits.maxEnqueuedTokens();
	}

	capacityRefusals(): number {
		return this.#limits.capacityRefusals();
	}

	rateAdmitted(protocol?: LimitProtocol): number {
		return this.#limits.rateAdmitted(protocol);
	}

	rateLimited(protocol?: LimitProtocol): number {
		return this.#limits.rateLimited(protocol);
	}

	/** The limits' counters for another process (`GET /_fake/limits`). */
	#limitCounters(): Record<string, unknown> {
		const protocols: LimitProtocol[] = ['openai', 'anthropic', 'google'];
		return {
			enqueuedTokens: this.enqueuedTokens(),
			maxEnqueuedTokens: this.maxEnqueuedTokens(),
			capacityRefusals: this.capacityRefusals(),
			rate: Object.fromEntries(protocols.map((protocol) => [protocol, { admitted: this.rateAdmitted(protocol), limited: this.rateLimited(protocol) }])),
		};
	}

	#chatState(): ChatState {
		return { config: this.#config, attempts: this.#attempts };
	}

	async #handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
		const url = new URL(req.url ?? '/', 'http://localhost');
		const path = url.pathname.replace(/\/+$/, '') || '/';
		const method = req.method ?? 'GET';
		const google = isGooglePath(path);
		const isApi = path.startsWith('/v1/') || google;
		const anthropic = isAnthropicPath(path);
		const entry: RequestLogEntry | null = isApi ? { seq: this.#log.length + 1, method, path, time: Date.now(), status: null, ...callerOf(req, url.searchParams) } : null;
		if (entry) this.#log.push(entry);
		try {
			let route: Route | undefined;
			let params: string[] = [];
			for (const candidate of this.#routes) {
				const match = candidate.method === method ? candidate.pattern.exec(path) : null;
				if (match) {
					route = candidate;
					params = match.slice(1);
					break;
				}
			}
			if (!route || (this.#config.noBatchApi && /^\/v1\/(files|batches)(\/|$)/.test(path))) throw notFound(method, path);
			// Without a key the Gemini API answers 403: it takes the caller for an unregistered one, not a bad key.
			if (google && googleKeyOf(req, url.searchParams) === null) throw new HttpError(403, apiError(MISSING_KEY_MESSAGE));
			if (isApi && !google && !isAuthorized(req, anthropic)) {
				throw new HttpError(
					401,
					anthropic
						? apiError('An API key is required: send it in the x-api-key header, or as Authorization: Bearer.', 'authentication_error')
						: apiError('You didn\'t provide an API key. You need to provide your API key in an Authorization header using Bearer auth.', 'invalid_request_error', 'invalid_api_key'),
				);
			}
			if (anthropic && typeof req.headers['anthropic-version'] !== 'string') {
				throw new HttpError(400, apiError('anthropic-version: header is required'));
			}
			await route.handler({ req, res, params, query: url.searchParams, entry });
		} catch (error) {
			if (res.headersSent) {
				res.destroy();
			} else if (error instanceof LimitRefusal) {
				// A limit's refusal is already in its vendor's words and shape (Gemini's details included).
				sendJson(res, error.status, error.body, error.headers);
			} else {
				const status = error instanceof HttpError ? error.status : 500;
				const body = error instanceof HttpError ? error.error : apiError(error instanceof Error ? error.message : String(error), 'server_error');
				const headers = error instanceof HttpError ? error.headers : {};
				// Anthropic and Gemini routes answer every error, whatever raised it, in their own shape.
				if (anthropic) sendJson(res, status, anthropicErrorBody(status, body.message), headers);
				else if (google) sendJson(res, status, googleErrorBody(status, body.message, retryAfterOf(headers)), headers);
				else sendError(res, status, body, headers);
			}
		}
		if (entry && res.headersSent) entry.status = res.statusCode;
	}

	async #chat({ req, res, entry }: RouteContext): Promise<void> {
		const parsed = parseChatRequest(await readJson(req));
		if (entry && parsed.ok) logPrompt(entry, parsed.request);
		if (!(await this.#chatTransportFaults(res))) return;
		if (!parsed.ok) throw new HttpError(parsed.status, parsed.error);
		const rateHeaders = this.#limits.admitCall('openai', parsed.request);
		const config = this.#config;
		if (config.latencyMs > 0 && !(await wait(res, config.latencyMs))) return;
		const outcome = answerChat(parsed.request, this.#chatState());
		if (!outcome.ok) throw new HttpError(outcome.status, outcome.error);
		if (entry) entry.usage = { prompt_tokens: outcome.body.usage.prompt_tokens, completion_tokens: outcome.body.usage.completion_tokens };
		sendJson(res, 200, outcome.body, { 'x-request-id': newId('req_'), 'openai-processing-ms': String(config.latencyMs), ...rateHeaders });
	}

	/** `POST /v1/messages`: the same faults and answers as chat completions, in Anthropic's shape. */
	async #message({ req, res, entry }: RouteContext): Promise<void> {
		const parsed = parseMessagesRequest(await readJson(req));
		if (entry && parsed.ok) logPrompt(entry, parsed.request);
		if (!(await this.#chatTransportFaults(res))) return;
		if (!parsed.ok) throw new HttpError(parsed.status, parsed.error);
		const rateHeaders = this.#limits.admitCall('anthropic', parsed.request);
		const config = this.#config;
		if (config.latencyMs > 0 && !(await wait(res, config.latencyMs))) return;
		const outcome = answerMessage(parsed.request, this.#chatState());
		if (!outcome.ok) throw new HttpError(outcome.status, outcome.error);
		if (entry) entry.usage = usageForLog(outcome.message);
		sendJson(res, 200, outcome.message, { 'request-id': newId('req_'), ...rateHeaders });
	}

	/** `POST /v1beta/models/{model}:generateContent`: the same faults and answers as chat completions, in Gemini's shape. */
	async #generateContent({ req, res, params, entry }: RouteContext): Promise<void> {
		const parsed = parseGenerateContentRequest(params[0] ?? '', await readJson(req));
		if (entry && parsed.ok) logPrompt(entry, parsed.request);
		if (!(await this.#chatTransportFaults(res))) return;
		if (!parsed.ok) throw new HttpError(parsed.status, parsed.error);
		// Gemini sends no rate-limit headers: its window only refuses.
		this.#limits.admitCall('google', parsed.request);
		const config = this.#config;
		if (config.latencyMs > 0 && !(await wait(res, config.latencyMs))) return;
		const outcome = answerGenerateContent(parsed.request, this.#chatState());
		if (!outcome.ok) throw new HttpError(outcome.status, outcome.error);
		if (entry) entry.usage = generateUsageForLog(outcome.response);
		sendJson(res, 200, outcome.response);
	}

	/**
	 * The faults of a model call that come before any answer: a hang, a hold, a 429, a 5xx. False when the client
	 * went away meanwhile (nothing is left to send); throws the 429 or 5xx.
	 */
	async #chatTransportFaults(res: ServerResponse): Promise<boolean> {
		const config = this.#config;
		if (config.hangChat) {
			await new Promise((resolve) => res.on('close', resolve));
			return false;
		}
		if (config.holdChat && !(await this.#holdChat(res))) return false;
		if (config.rateLimit && config.rateLimit.count > 0) {
			config.rateLimit.count--;
			throw new HttpError(429, apiError('Rate limit reached for requests. Please try again later.', 'requests', 'rate_limit_exceeded'), {
				'retry-after': String(config.rateLimit.retryAfterS),
				'x-ratelimit-remaining-requests': '0',
			});
		}
		if (config.serverErrors && config.serverErrors.count > 0) {
			config.serverErrors.count--;
			throw new HttpError(config.serverErrors.status, apiError('The server had an error while processing your request. Sorry about that!', 'server_error'));
		}
		return true;
	}

	/** Waits for `releaseChat()`; false when the client went away meanwhile. */
	#holdChat(res: ServerResponse): Promise<boolean> {
		return holdUntilReleased(this.#heldChat, res);
	}

	async #uploadFile({ req, res, entry }: RouteContext): Promise<void> {
		const contentType = req.headers['content-type'] ?? '';
		if (!contentType.startsWith('multipart/form-data')) {
			throw new HttpError(400, apiError('Files must be uploaded as multipart/form-data.'));
		}
		let form: FormData;
		try {
			form = await new Response(await readBody(req), { headers: { 'content-type': contentType } }).formData();
		} catch {
			throw new HttpError(400, apiError('Could not parse the multipart body.'));
		}
		const file = form.get('file');
		const purpose = form.get('purpose');
		if (typeof purpose !== 'string' || purpose === '') throw new HttpError(400, apiError("Missing required parameter: 'purpose'.", 'invalid_request_error', null, 'purpose'));
		if (file === null || typeof file === 'string') throw new HttpError(400, apiError("Missing required parameter: 'file'.", 'invalid_request_error', null, 'file'));
		const filename = (file as File).name || 'upload';
		if (purpose === 'batch' && !filename.endsWith('.jsonl')) {
			throw new HttpError(400, apiError(`Invalid file format for Batch API. Must be .jsonl, got ${filename}.`, 'invalid_request_error', null, 'file'));
		}
		const content = Buffer.from(await file.arrayBuffer());
		const meta = this.#files.add({ filename, purpose, chunks: [content] });
		meta.created_at -= this.#config.uploadAgeS;
		if (entry) entry.fileId = meta.id;
		sendJson(res, 200, meta);
	}

	#file(id: string | undefined, entry: RequestLogEntry | null) {
		const file = id ? this.#files.get(id) : undefined;
		if (entry && id) entry.fileId = id;
		if (!file) throw new HttpError(404, apiError(`No such File object: ${id}`, 'invalid_request_error', null, 'id'));
		return file;
	}

	#getFile({ res, params, entry }: RouteContext): void {
		sendJson(res, 200, this.#file(params[0], entry).meta);
	}

	#deleteFile({ res, params, entry }: RouteContext): void {
		const { meta } = this.#file(params[0], entry);
		if (this.#config.refuseFileDeletes) throw new HttpError(403, apiError('You have insufficient permissions for this operation.', 'insufficient_permissions'));
		this.#files.delete(meta.id);
		sendJson(res, 200, { id: meta.id, object: 'file', deleted: true });
	}

	async #fileContent({ res, params, entry }: RouteContext): Promise<void> {
		const { chunks } = this.#file(params[0], entry);
		await this.#download(res, chunks, 'application/octet-stream');
	}

	/** Sends a download, cut after `holdFileAfterLines` lines until `releaseFiles()` when that knob is set. */
	async #download(res: ServerResponse, chunks: readonly Buffer[], contentType: string): Promise<void> {
		const holdAfter = this.#config.holdFileAfterLines;
		if (holdAfter === null) return sendChunks(res, chunks, contentType);
		// The first lines go out at once; the rest waits, with the connection open, for releaseFiles().
		const content = Buffer.concat(chunks);
		let cut = 0;
		for (let line = 0; line < holdAfter && cut < content.length; line++) {
			const newline = content.indexOf(0x0a, cut);
			cut = newline === -1 ? content.length : newline + 1;
		}
		res.writeHead(200, { 'content-type': contentType, 'content-length': content.length });
		res.write(content.subarray(0, cut));
		if (await holdUntilReleased(this.#heldFiles, res)) res.end(content.subarray(cut));
	}

	async #createBatch({ req, res, entry }: RouteContext): Promise<void> {
		const body = await readJson(req);
		if (this.#config.holdBatchCreates && !(await holdUntilReleased(this.#heldCreates, res))) return;
		const refusal = this.#config.refuseBatchCreates;
		if (refusal !== null) throw new HttpError(refusal, batchCreateRefusal(refusal));
		const result = this.#batches.create(body);
		if (!result.ok) throw new HttpError(result.status, result.error);
		if (entry) {
			Object.assign(entry, {
				batchId: result.batch.id,
				metadata: result.batch.metadata,
				customIds: (result.lines ?? []).map((line) => line.customId),
				...linesLogged(result.lines ?? []),
			});
		}
		sendJson(res, 200, result.batch);
	}

	#listBatches({ res, query }: RouteContext): void {
		const rawLimit = query.get('limit');
		const limit = rawLimit === null ? 20 : Number(rawLimit);
		if (!Number.isInteger(limit) || limit < 1 || limit > 100) {
			throw new HttpError(400, apiError(`Invalid 'limit': ${rawLimit}. Expected an integer from 1 to 100.`, 'invalid_request_error', null, 'limit'));
		}
		const { data, has_more } = this.#batches.list(query.get('after'), limit);
		sendJson(res, 200, { object: 'list', data, first_id: data[0]?.id ?? null, last_id: data.at(-1)?.id ?? null, has_more });
	}

	async #retrieveBatch({ res, params, entry }: RouteContext): Promise<void> {
		if (entry && params[0]) entry.batchId = params[0];
		const result = await this.#batches.retrieve(params[0] ?? '');
		if (!result.ok) throw new HttpError(result.status, result.error);
		sendJson(res, 200, result.batch);
	}

	async #cancelBatch({ res, params, entry }: RouteContext): Promise<void> {
		if (entry && params[0]) entry.batchId = params[0];
		const result = await this.#batches.cancel(params[0] ?? '');
		if (!result.ok) throw new HttpError(result.status, result.error);
		sendJson(res, 200, result.batch);
	}

	async #createMessageBatch({ req, res, entry }: RouteContext): Promise<void> {
		const body = await readJson(req, MAX_BATCH_BODY_BYTES);
		if (this.#config.holdBatchCreates && !(await holdUntilReleased(this.#heldCreates, res))) return;
		const refusal = this.#config.refuseBatchCreates;
		if (refusal !== null) throw new HttpError(refusal, apiError(messageBatchCreateRefusal(refusal)));
		const result = this.#messageBatches.create(body);
		if (!result.ok) throw new HttpError(result.status, result.error);
		if (entry) {
			Object.assign(entry, {
				batchId: result.batch.id,
				customIds: (result.lines ?? []).map((line) => line.customId),
				...linesLogged(result.lines ?? []),
			});
		}
		sendJson(res, 200, result.batch);
	}

	#listMessageBatches({ res, query }: RouteContext): void {
		const rawLimit = query.get('limit');
		const limit = rawLimit === null ? 20 : Number(rawLimit);
		if (!Number.isInteger(limit) || limit < 1 || limit > 1000) throw new HttpError(400, apiError(`limit: Input should be an integer from 1 to 1000, got ${rawLimit}`));
		const afterId = query.get('after_id');
		const beforeId = query.get('before_id');
		if (afterId !== null && beforeId !== null) throw new HttpError(400, apiError('Give at most one of after_id and before_id.'));
		const { data, has_more } = this.#messageBatches.list(limit, afterId, beforeId);
		sendJson(res, 200, { data, has_more, first_id: data[0]?.id ?? null, last_id: data.at(-1)?.id ?? null });
	}

	async #retrieveMessageBatch({ res, params, entry }: RouteContext): Promise<void> {
		if (entry && params[0]) entry.batchId = params[0];
		const result = await this.#messageBatches.retrieve(params[0] ?? '');
		if (!result.ok) throw new HttpError(result.status, result.error);
		sendJson(res, 200, result.batch);
	}

	async #cancelMessageBatch({ res, params, entry }: RouteContext): Promise<void> {
		if (entry && params[0]) entry.batchId = params[0];
		const result = await this.#messageBatches.cancel(params[0] ?? '');
		if (!result.ok) throw new HttpError(result.status, result.error);
		sendJson(res, 200, result.batch);
	}

	async #deleteMessageBatch({ res, params, entry }: RouteContext): Promise<void> {
		if (entry && params[0]) entry.batchId = params[0];
		const result = await this.#messageBatches.delete(params[0] ?? '');
		if (!result.ok) throw new HttpError(result.status, result.error);
		sendJson(res, 200, result.deleted);
	}

	async #messageBatchResults({ res, params, entry }: RouteContext): Promise<void> {
		if (entry && params[0]) entry.batchId = params[0];
		const result = this.#messageBatches.results(params[0] ?? '');
		if (!result.ok) throw new HttpError(result.status, result.error);
		await this.#download(res, result.chunks, 'application/binary');
	}

	/**
	 * `POST /v1beta/models/{model}:batchGenerateContent`: a batch of inline requests, or of an uploaded file. A body over
	 * the inline limit is read to its end (so the client gets the answer, not a reset connection) and refused with 400,
	 * as the real API does.
	 */
	async #createGoogleBatch({ req, res, params, entry }: RouteContext): Promise<void> {
		const body = await readJsonWithin(req, MAX_INLINE_BATCH_BYTES, INLINE_BATCH_TOO_LARGE);
		if (this.#config.holdBatchCreates && !(await holdUntilReleased(this.#heldCreates, res))) return;
		const refusal = this.#config.refuseBatchCreates;
		if (refusal !== null) throw new HttpError(refusal, apiError(googleBatchCreateRefusal(refusal, params[0] ?? '')));
		const result = this.#googleBatches.create(params[0] ?? '', body);
		if (!result.ok) throw new HttpError(result.status, result.error);
		if (entry) {
			const { displayName } = result.operation.metadata;
			Object.assign(entry, {
				batchId: result.operation.name.replace(/^batches\//, ''),
				customIds: (result.lines ?? []).map((line) => line.key),
				...linesLogged(result.lines ?? []),
				metadata: displayName === undefined ? null : { display_name: displayName },
				...(result.operation.metadata.inputConfig ? { fileId: result.operation.metadata.inputConfig.fileName } : {}),
			});
		}
		sendJson(res, 200, result.operation);
	}

	#listGoogleBatches({ res, query }: RouteContext): void {
		const rawSize = query.get('pageSize');
		const pageSize = rawSize === null ? 50 : Number(rawSize);
		if (!Number.isInteger(pageSize) || pageSize < 1 || pageSize > 1000) {
			throw new HttpError(400, apiError(`* ListBatchesRequest.page_size: must be an integer from 1 to 1000, got ${rawSize}`));
		}
		const result = this.#googleBatches.list(pageSize, query.get('pageToken'));
		if (!result.ok) throw new HttpError(result.status, result.error);
		sendJson(res, 200, result.nextPageToken === undefined ? { operations: result.operations } : { operations: result.operations, nextPageToken: result.nextPageToken });
	}

	async #getGoogleBatch({ res, params, entry }: RouteContext): Promise<void> {
		if (entry && params[0]) entry.batchId = params[0];
		const result = await this.#googleBatches.get(params[0] ?? '');
		if (!result.ok) throw new HttpError(result.status, result.error);
		sendJson(res, 200, result.operation);
	}

	async #cancelGoogleBatch({ res, params, entry }: RouteContext): Promise<void> {
		if (entry && params[0]) entry.batchId = params[0];
		const result = await this.#googleBatches.cancel(params[0] ?? '');
		if (!result.ok) throw new HttpError(result.status, result.error);
		sendJson(res, 200, {});
	}

	async #deleteGoogleBatch({ res, params, entry }: RouteContext): Promise<void> {
		if (entry && params[0]) entry.batchId = params[0];
		const result = await this.#googleBatches.delete(params[0] ?? '');
		if (!result.ok) throw new HttpError(result.status, result.error);
		sendJson(res, 200, {});
	}

	/**
	 * `POST /upload/v1beta/files`: the start of a resumable upload, answered with its upload URL in a header and no
	 * body; or, at that URL (`?upload_id=`), one request of its bytes, the last answered with the file.
	 */
	async #uploadGoogleFile({ req, res, query, entry }: RouteContext): Promise<void> {
		const uploadId = query.get('upload_id');
		const header = (name: string) => (typeof req.headers[name] === 'string' ? req.headers[name] : undefined);
		const result =
			uploadId === null
				? { ...this.#googleFiles.startUpload(req.headers, await readJson(req)), file: null }
				: this.#googleFiles.uploadChunk(uploadId, header('x-goog-upload-command'), header('x-goog-upload-offset'), await readBody(req));
		if (!result.ok) throw new HttpError(result.status, result.error);
		if (!result.file) {
			res.writeHead(200, { ...result.headers, 'content-length': 0 });
			res.end();
			return;
		}
		if (entry) entry.fileId = result.file.name;
		sendJson(res, 200, { file: result.file }, result.headers);
	}

	#listGoogleFiles({ res, query }: RouteContext): void {
		const result = this.#googleFiles.list(query.get('pageSize'), query.get('pageToken'));
		if (!result.ok) throw new HttpError(result.status, result.error);
		// Google leaves an empty list out of the answer.
		sendJson(res, 200, { ...(result.files.length > 0 ? { files: result.files } : {}), ...(result.nextPageToken === undefined ? {} : { nextPageToken: result.nextPageToken }) });
	}

	#getGoogleFile({ res, params, entry }: RouteContext): void {
		if (entry && params[0]) entry.fileId = `files/${params[0]}`;
		const result = this.#googleFiles.get(params[0] ?? '');
		if (!result.ok) throw new HttpError(result.status, result.error);
		sendJson(res, 200, result.file);
	}

	#deleteGoogleFile({ res, params, entry }: RouteContext): void {
		if (entry && params[0]) entry.fileId = `files/${params[0]}`;
		const found = this.#googleFiles.get(params[0] ?? '');
		if (!found.ok) throw new HttpError(found.status, found.error);
		if (this.#config.refuseFileDeletes) throw new HttpError(403, apiError('Permission denied: this API key may not delete files.'));
		this.#googleFiles.delete(params[0] ?? '');
		sendJson(res, 200, {});
	}

	/**
	 * `GET /download/v1beta/files/{id}:download?alt=media` (or without `/download`, as the SDK's `files.download`
	 * asks): the bytes of a file the API generated, held after `holdFileAfterLines` lines when that knob is set. An
	 * uploaded file cannot be downloaded, as at Google, which gives only generated files a `downloadUri`.
	 */
	async #downloadGoogleFile({ res, params, query, entry }: RouteContext): Promise<void> {
		if (entry && params[0]) entry.fileId = `files/${params[0]}`;
		if (query.get('alt') !== 'media') throw new HttpError(400, apiError('A file is downloaded with alt=media.'));
		const result = this.#googleFiles.content(params[0] ?? '');
		if (!result.ok) throw new HttpError(result.status, result.error);
		if (result.file.source !== 'GENERATED') throw new HttpError(400, apiError(`Only generated files can be downloaded; ${result.file.name} was uploaded.`));
		await this.#download(res, result.chunks, result.file.mimeType);
	}

	async #adminConfigure({ req, res }: RouteContext): Promise<void> {
		const patch = await readJson(req);
		if (typeof patch === 'object' && patch !== null && 'responders' in patch) {
			throw new HttpError(400, apiError('responders can only be configured in-process.', 'invalid_request_error', null, 'responders'));
		}
		try {
			this.configure(patch as FakeConfigPatch);
		} catch (error) {
			if (error instanceof TypeError) throw new HttpError(400, apiError(error.message));
			throw error;
		}
		sendJson(res, 200, { ok: true, config: configToJson(this.#config) });
	}
}

/** What a batch create's log entry says of its input lines, in file order: each one's route and its page's facts. */
function linesLogged(lines: readonly { request: ChatRequest | null }[]): Pick<RequestLogEntry, 'routes' | 'lineFacts'> {
	return { routes: lines.map((line) => line.request?.route ?? null), lineFacts: lines.map((line) => factsOf(line.request?.context ?? null) ?? null) };
}

/** The page's `facts` in a prompt context, when it has them. */
function factsOf(context: Record<string, unknown> | null): Record<string, unknown> | undefined {
	const facts = context?.['facts'];
	return typeof facts === 'object' && facts !== null && !Array.isArray(facts) ? (facts as Record<string, unknown>) : undefined;
}

/** Records what a model call's prompt context says: its task and route, and the page inputs tests look for. */
function logPrompt(entry: RequestLogEntry, request: ChatRequest): void {
	Object.assign(entry, { task: request.task, route: request.route, schemaName: request.schemaName });
	const instructions = request.context?.['editor_instructions'];
	if (typeof instructions === 'string') entry.instructions = instructions;
	const qualityIssues = request.context?.['quality_issues'];
	if (Array.isArray(qualityIssues)) entry.qualityIssues = qualityIssues.map(String);
	const facts = factsOf(request.context);
	if (facts) entry.facts = facts;
}

/** The wait a `retry-after` header of an error asks for, in seconds; null when there is none. */
function retryAfterOf(headers: Record<string, string>): number | null {
	const value = Number(headers['retry-after']);
	return headers['retry-after'] !== undefined && Number.isFinite(value) ? value : null;
}

/**
 * Reads a JSON body of at most `maxBytes`; a longer one is read to its end without being kept, then refused with
 * 400 and `message`. (Stopping mid-body would reset the connection before the client could read the answer.)
 */
async function readJsonWithin(req: IncomingMessage, maxBytes: number, message: string): Promise<unknown> {
	const chunks: Buffer[] = [];
	let size = 0;
	for await (const chunk of req) {
		size += (chunk as Buffer).length;
		if (size <= maxBytes) chunks.push(chunk as Buffer);
	}
	if (size > maxBytes) throw new HttpError(400, apiError(message));
	if (size === 0) return {};
	try {
		return JSON.parse(Buffer.concat(chunks).toString('utf8'));
	} catch {
		throw new HttpError(400, apiError('Invalid JSON payload received. Unexpected token.'));
	}
}

/** The message the Gemini API sends with a refused batch create of this status (429 and 5xx get Google's own words). */
function googleBatchCreateRefusal(status: number, model: string): string {
	if (status === 401) return 'API key not valid. Please pass a valid API key.';
	if (status === 403) return 'Permission denied: this API key may not use the Batch API.';
	if (status === 404) return `models/${model} is not found for API version v1beta, or is not supported for batchGenerateContent.`;
	return 'Batch creation is not available for this model.';
}

/** The message Anthropic sends with a refused batch create of this status. */
function messageBatchCreateRefusal(status: number): string {
	if (status === 401) return 'invalid x-api-key';
	if (status === 403) return 'Your API key does not have permission to use the Message Batches API.';
	if (status < 500) return 'The model is not supported by the Message Batches API.';
	return 'Internal server error';
}

/** The error body the real service sends with a refused batch create of this status. */
function batchCreateRefusal(status: number) {
	if (status === 401) return apiError('Incorrect API key provided: sk-revo*****oked. You can find your API key at https://platform.openai.com/account/api-keys.', 'invalid_request_error', 'invalid_api_key');
	if (status === 403) return apiError('You are not allowed to use the Batch API with this project.', 'invalid_request_error', 'permission_denied');
	if (status < 500) return apiError('The model `gpt-4o-mini` is not supported by the Batch API.', 'invalid_request_error', 'model_not_found');
	return apiError('The server had an error while processing your request. Sorry about that!', 'server_error');
}

/** Starts a fake OpenAI-, Anthropic- and Gemini-compatible provider on loopback and resolves once it listens. */
export async function startFakeProvider(options: FakeProviderOptions = {}): Promise<FakeProvider> {
	const { port = 0, host = '127.0.0.1' } = options;
	if (!Number.isInteger(port) || port < 0 || port > 65535) {
		throw new TypeError(`port must be an integer from 0 to 65535, got ${JSON.stringify(port)}`);
	}
	if (typeof host !== 'string' || host === '') throw new TypeError(`host must be a non-empty string, got ${JSON.stringify(host)}`);
	const server = new FakeProviderServer();
	await server.listen(port, host);
	return server;
}
