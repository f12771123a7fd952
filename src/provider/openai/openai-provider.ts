import { createReadStream } from 'node:fs';
import { rm } from 'node:fs/promises';
import OpenAI, { toStreamingFile } from 'openai';
import { nodeHttpFetch } from './node-http-fetch.ts';
import type { Logger } from '../../shared/logger.ts';
import { assertBackoff, DEFAULT_BACKOFF, defaultSleep } from '../backoff.ts';
import { createRetrier, neverRepeated } from '../retry-policy.ts';
import { spoolLines } from '../batch-spool.ts';
import { checkId, checkLookup, checkRequest, positiveInteger } from '../call-checks.ts';
import type { BackoffOptions, Sleep } from '../backoff.ts';
import { readLines } from '../line-reader.ts';
import { ProviderCallError } from '../provider-call-error.ts';
import { classifyError, redact, toCallError } from '../provider-failure.ts';
import type { ProviderFailure } from '../provider-failure.ts';
import { parseBatchOutputLine } from './batch-lines.ts';
import { readCompletionContent } from './read-completion.ts';
import { readUsage, type BatchInfo, type BatchStatus, type JsonCompletionRequest, type OpenAiProvider, type ProviderFile, type BatchApiProbe } from '../types.ts';
import { allOf, firstOf } from '../batch-lookups.ts';
import { estimateInputTokens } from '../pacing/input-tokens.ts';
import type { Pacer } from '../pacing/pacer.ts';

export interface OpenAiProviderOptions {
	/** `OPENAI_API_KEY`. Without it every call fails at once with `OPENAI_API_KEY is not set`, before any network use. */
	apiKey: string | undefined;
	/** Any OpenAI-compatible base URL. Default: the SDK's (`OPENAI_BASE_URL`, else the OpenAI API). */
	baseURL?: string;
	/** Chat model for every request. */
	model: string;
	/** Time limit of one HTTP attempt, in milliseconds. Default 120000. */
	timeoutMs?: number;
	/** Attempts per call, the first included. Default 4. */
	maxAttempts?: number;
	/** Exponential backoff between attempts. Default `{ baseMs: 1000, maxMs: 30000 }`. */
	backoff?: BackoffOptions;
	/** Ceiling for a wait the provider asks for with `retry-after(-ms)`. Default 60000. */
	maxRetryAfterMs?: number;
	/** How many recent batches `findBatchByMetadata` looks at, newest first. Default 1000. */
	maxBatchScan?: number;
	/** Headers sent with every request, as an OpenAI-compatible server may ask (Settings → AI). Default none. */
	headers?: Record<string, string>;
	logger: Logger;
	/** Waits between attempts; tests pass a fast one. Default: a timer that an abort signal cuts short. */
	sleep?: Sleep;
	/** The pacing of the key's chat calls (pacing/pacer.ts). Default none: they go unpaced. */
	pacer?: Pacer;
	/** How long a chat call may wait for the key's rate limit in all. Default 300000. */
	rateWaitMs?: number;
}

const CHAT_ENDPOINT = '/v1/chat/completions';
const LIST_PAGE_SIZE = 100;
const MISSING_KEY: ProviderFailure = { reason: 'missing_api_key', retryable: false };
/** What a server without a route answers: not found, method not allowed, not implemented. */
const NO_ROUTE = new Set([404, 405, 501]);
const PROBE_TIMEOUT_MS = 10_000;

/**
 * An OpenAI-compatible provider on the official SDK with the SDK's own retries switched off (`maxRetries: 0`),
 * so that this module's bounded retry policy is the only one. Chat calls retry 429 (honouring `retry-after`),
 * 408/409/5xx, connection errors, timeouts, malformed or refused output, truncation and outputs the request's
 * `validate` rejects; anything else fails at once with a {@link ProviderCallError}.
 */
export function createOpenAiProvider(options: OpenAiProviderOptions): OpenAiProvider {
	const settings = checkOptions(options);
	const { logger, model, maxAttempts, backoff, sleep, maxRetryAfterMs, maxBatchScan, rateWaitMs } = settings;
	const makeClient = (fetch?: typeof nodeHttpFetch) =>
		settings.apiKey === undefined
			? null
			: new OpenAI({
					apiKey: settings.apiKey,
					...(settings.baseURL !== undefined ? { baseURL: settings.baseURL } : {}),
					...(options.headers ? { defaultHeaders: options.headers } : {}),
					timeout: settings.timeoutMs,
					maxRetries: 0,
					// The SDK would otherwise write to the console; our own log lines carry the context.
					logLevel: 'off',
					...(fetch ? { fetch } : {}),
				});
	const client = makeClient();
	// Batch input files go through node:http: Node's fetch holds a whole uploaded file in memory (node-http-fetch.ts).
	const uploadClient = makeClient(nodeHttpFetch);
	// Header values may be credentials too (an `x-api-key` of a gateway): never in an error or a log line.
	const secrets = [settings.apiKey, ...Object.values(options.headers ?? {})];
	const withRetries = createRetrier({ maxAttempts, backoff, maxRetryAfterMs, sleep, logger, secrets, pacer: options.pacer, rateWaitMs, ...(options.pacer ? { provider: options.pacer.provider } : {}) });

	function requireClient(which: OpenAI | null = client): OpenAI {
		if (!which) throw toCallError(MISSING_KEY, 1);
		return which;
	}

	function chatBody(request: JsonCompletionRequest) {
		checkRequest(request);
		return {
			model,
			messages: request.messages.map(({ role, content }) => ({ role, content })),
			response_format: {
				type: 'json_schema' as const,
				json_schema: { name: request.schemaName, schema: request.schema, strict: true },
			},
		};
	}

	function batchInfo(batch: OpenAI.Batches.Batch): BatchInfo {
		const counts = batch.request_counts;
		const errors = batch.errors?.data ?? [];
		return {
			id: batch.id,
			status: batch.status as BatchStatus,
			inputFileId: batch.input_file_id ?? null,
			outputFileId: batch.output_file_id ?? null,
			errorFileId: batch.error_file_id ?? null,
			requestCounts: { total: counts?.total ?? 0, completed: counts?.completed ?? 0, failed: counts?.failed ?? 0 },
			metadata: { ...(batch.metadata ?? {}) },
			errors: errors.slice(0, 10).map((error) => ({
				code: error.code ?? null,
				message: redact(error.message ?? 'invalid batch input', secrets),
				line: typeof error.line === 'number' ? error.line : null,
			})),
			createdAt: typeof batch.created_at === 'number' ? batch.created_at : null,
		};
	}

	const onlyRateLimits = (failure: ProviderFailure) => failure.reason === 'rate_limited';

	/** The batches whose `metadata[key] === value` among the `maxBatchScan` most recent, newest first (as listed). */
	async function* batchesTagged(key: string, value: string): AsyncGenerator<BatchInfo> {
		checkLookup(key, value);
		const api = requireClient();
		let after: string | undefined;
		let scanned = 0;
		while (scanned < maxBatchScan) {
			const limit = Math.min(LIST_PAGE_SIZE, maxBatchScan - scanned);
			const page = await withRetries({ op: 'list_batches', logContext: { after } }, async () => ({
				ok: true as const,
				value: await api.batches.list({ limit, ...(after !== undefined ? { after } : {}) }),
			}));
			for (const batch of page.data.slice(0, limit)) {
				if (batch.metadata?.[key] === value) yield batchInfo(batch);
			}
			scanned += page.data.length;
			const last = page.data.at(-1)?.id;
			if (!page.has_more || page.data.length === 0 || last === undefined) break;
			after = last;
		}
	}

	return {
		async probeBatchApi(): Promise<BatchApiProbe> {
			if (!client) return 'unknown';
			try {
				// One attempt, no retries: an answer decides, anything else is asked again later. The body is read raw:
				// some servers (LM Studio) answer an unknown route with 200 and an error object, which the SDK's page
				// would take for an empty list.
				const response = await client.batches.list({ limit: 1 }, { timeout: PROBE_TIMEOUT_MS }).asResponse();
				const body: unknown = await response.json().catch(() => null);
				return typeof body === 'object' && body !== null && Array.isArray((body as { data?: unknown }).data) ? 'available' : 'missing';
			} catch (error) {
				return error instanceof OpenAI.APIError && NO_ROUTE.has(error.status ?? 0) ? 'missing' : 'unknown';
			}
		},

		async completeJson<T = unknown>(request: JsonCompletionRequest): Promise<T> {
			const body = chatBody(request);
			const api = requireClient();
			const paced = { tokens: estimateInputTokens(request) };
			return withRetries<T>({ op: 'chat', signal: request.signal, logContext: request.logContext, paced }, async () => {
				// With the answer's headers: the key's rate limits are learnt from them (pacing/).
				const { data: completion, response } = await api.chat.completions
					.create(body, {
						...(request.signal ? { signal: request.signal } : {}),
					})
					.withResponse();
				const { headers } = response;
				const usage = readUsage((completion as { usage?: unknown }).usage);
				if (usage) request.onUsage?.(usage);
				const content = readCompletionContent(completion);
				if (!content.ok) return { ...content, headers };
				const problem = request.validate?.(content.value) ?? null;
				if (problem !== null) {
					return { ok: false, failure: { reason: 'invalid_output', retryable: true, detail: redact(problem, secrets) }, headers };
				}
				return { ok: true, value: content.value as T, headers };
			});
		},

		buildBatchLine(customId: string, request: JsonCompletionRequest): string {
			if (typeof customId !== 'string' || customId === '') {
				throw new TypeError(`Expected \`customId\` to be a non-empty string, got \`${String(customId)}\` (${typeof customId})`);
			}
			return JSON.stringify({ custom_id: customId, method: 'POST', url: CHAT_ENDPOINT, body: chatBody(request) });
		},

		async uploadBatchFile(lines: string[] | AsyncIterable<string>, filename: string): Promise<string> {
			if (typeof filename !== 'string' || filename.trim() === '') {
				throw new TypeError(`Expected \`filename\` to be a non-empty string, got \`${String(filename)}\` (${typeof filename})`);
			}
			const api = requireClient(uploadClient);
			// The JSONL goes to a temporary file first and is streamed from there to the upload: a batch of 50,000
			// pages is about a gigabyte of prompts, which must never sit in memory as one string or buffer. The file
			// also lets a 429 retry send the same bytes again.
			const spool = await spoolLines(lines);
			try {
				if (spool.bytes === 0) throw new TypeError('Expected `lines` to hold at least one line, got none');
				const created = await withRetries({ op: 'upload', mayRetry: onlyRateLimits }, async () => ({
					ok: true as const,
					value: await api.files.create({
						file: toStreamingFile(createReadStream(spool.path), filename, { type: 'application/jsonl' }),
						purpose: 'batch',
					}),
				}));
				return created.id;
			} finally {
				await rm(spool.dir, { recursive: true, force: true });
			}
		},

		async createBatch(inputFileId: string, metadata: Record<string, string>): Promise<BatchInfo> {
			checkId('inputFileId', inputFileId);
			checkMetadata(metadata);
			const api = requireClient();
			const batch = await withRetries({ op: 'create_batch', mayRetry: neverRepeated, logContext: { inputFileId } }, async () => ({
				ok: true as const,
				value: await api.batches.create({
					input_file_id: inputFileId,
					endpoint: CHAT_ENDPOINT,
					completion_window: '24h',
					metadata,
				}),
			}));
			return batchInfo(batch);
		},

		findBatchByMetadata: (key: string, value: string) => firstOf(batchesTagged(key, value)),

		findBatchesByMetadata: (key: string, value: string) => allOf(batchesTagged(key, value)),

		async retrieveBatch(id: string): Promise<BatchInfo> {
			checkId('id', id);
			const api = requireClient();
			const batch = await withRetries({ op: 'retrieve_batch', logContext: { batchId: id } }, async () => ({
				ok: true as const,
				value: await api.batches.retrieve(id),
			}));
			return batchInfo(batch);
		},

		async cancelBatch(id: string): Promise<BatchInfo> {
			checkId('id', id);
			const api = requireClient();
			const batch = await withRetries({ op: 'cancel_batch', logContext: { batchId: id } }, async () => ({
				ok: true as const,
				value: await api.batches.cancel(id),
			}));
			return batchInfo(batch);
		},

		async deleteFile(fileId: string): Promise<void> {
			checkId('fileId', fileId);
			const api = requireClient();
			try {
				// Retried only after a 429: a delete is tidying up, and a step (or a shutdown) should not wait out an outage for it.
				await withRetries({ op: 'delete_file', mayRetry: onlyRateLimits, logContext: { fileId } }, async () => ({ ok: true as const, value: await api.files.delete(fileId) }));
			} catch (error) {
				// Already gone (deleted before, or expired): what was asked for holds.
				if (error instanceof ProviderCallError && error.status === 404) return;
				throw error;
			}
		},

		async *listBatchFiles(): AsyncGenerator<ProviderFile> {
			const api = requireClient();
			let after: string | undefined;
			for (;;) {
				const page = await withRetries({ op: 'list_files', logContext: { after } }, async () => ({
					ok: true as const,
					value: await api.files.list({ purpose: 'batch', order: 'asc', limit: LIST_PAGE_SIZE, ...(after !== undefined ? { after } : {}) }),
				}));
				for (const file of page.data) yield { id: file.id, filename: file.filename, createdAt: file.created_at };
				const last = page.data.at(-1)?.id;
				if (!page.has_more || last === undefined) return;
				after = last;
			}
		},

		streamFileLines(fileId: string): AsyncIterable<string> {
			checkId('fileId', fileId);
			return streamLines(fileId);
		},

		parseBatchLine: parseBatchOutputLine,
	};

	async function* streamLines(fileId: string): AsyncGenerator<string> {
		const api = requireClient();
		const response = await withRetries({ op: 'file_content', logContext: { fileId } }, async () => ({
			ok: true as const,
			value: await api.files.content(fileId),
		}));
		if (!response.body) return;
		try {
			yield* readLines(response.body, (error) =>
				logger.debug({ op: 'file_content', fileId, reason: classifyError(error, secrets).reason }, 'pseo-automation: closing a provider file early failed'),
			);
		} catch (error) {
			if (error instanceof ProviderCallError) throw error;
			const failure = classifyError(error, secrets);
			logger.warn({ op: 'file_content', fileId, reason: failure.reason }, 'pseo-automation: reading a provider file failed');
			throw new ProviderCallError(`Reading provider file ${fileId} failed midway`, { reason: failure.reason, retryable: true });
		}
	}
}

interface Settings {
	apiKey: string | undefined;
	baseURL: string | undefined;
	model: string;
	timeoutMs: number;
	maxAttempts: number;
	backoff: BackoffOptions;
	maxRetryAfterMs: number;
	maxBatchScan: number;
	rateWaitMs: number;
	logger: Logger;
	sleep: Sleep;
}

function checkOptions(options: OpenAiProviderOptions): Settings {
	if (typeof options !== 'object' || options === null) {
		throw new TypeError(`Expected provider options to be an object, got \`${String(options)}\``);
	}
	const { apiKey, baseURL, model, logger } = options;
	if (apiKey !== undefined && typeof apiKey !== 'string') {
		throw new TypeError(`Expected \`apiKey\` to be a string or undefined, got a ${typeof apiKey}`);
	}
	if (baseURL !== undefined && (typeof baseURL !== 'string' || !URL.canParse(baseURL) || !/^https?:$/.test(new URL(baseURL).protocol))) {
		throw new TypeError(`Expected \`baseURL\` to be an http(s) URL, got \`${String(baseURL)}\``);
	}
	if (typeof model !== 'string' || model.trim() === '') {
		throw new TypeError(`Expected \`model\` to be a non-empty string, got \`${String(model)}\` (${typeof model})`);
	}
	if (typeof logger !== 'object' || logger === null || !['debug', 'info', 'warn', 'error'].every((level) => typeof (logger as unknown as Record<string, unknown>)[level] === 'function')) {
		throw new TypeError(`Expected \`logger\` to have debug, info, warn and error methods, got \`${String(logger)}\``);
	}
	const backoff = options.backoff ?? DEFAULT_BACKOFF;
	assertBackoff(backoff);
	const sleep = options.sleep ?? defaultSleep;
	if (typeof sleep !== 'function') throw new TypeError(`Expected \`sleep\` to be a function, got \`${String(sleep)}\` (${typeof sleep})`);
	return {
		apiKey: apiKey === undefined || apiKey.trim() === '' ? undefined : apiKey,
		baseURL,
		model,
		timeoutMs: positiveInteger('timeoutMs', options.timeoutMs, 120_000),
		maxAttempts: positiveInteger('maxAttempts', options.maxAttempts, 4),
		backoff: { baseMs: backoff.baseMs, maxMs: backoff.maxMs },
		maxRetryAfterMs: positiveInteger('maxRetryAfterMs', options.maxRetryAfterMs, 60_000, 0),
		maxBatchScan: positiveInteger('maxBatchScan', options.maxBatchScan, 1000),
		rateWaitMs: positiveInteger('rateWaitMs', options.rateWaitMs, 300_000, 0),
		logger,
		sleep,
	};
}

function checkMetadata(metadata: unknown): void {
	if (typeof metadata !== 'object' || metadata === null || Array.isArray(metadata)) {
		throw new TypeError(`Expected \`metadata\` to be an object of strings, got \`${String(metadata)}\``);
	}
	const entries = Object.entries(metadata);
	if (entries.length > 16) throw new TypeError(`Expected \`metadata\` to hold at most 16 pairs, got ${entries.length}`);
	for (const [key, value] of entries) {
		if (key.length === 0 || key.length > 64) throw new TypeError(`Expected metadata key \`${key}\` to be 1 to 64 characters long`);
		if (typeof value !== 'string' || value.length > 512) {
			throw new TypeError(`Expected metadata \`${key}\` to be a string of at most 512 characters, got \`${String(value).slice(0, 80)}\` (${typeof value})`);
		}
	}
}
