import type { BatchJob, GoogleGenAI, InlinedRequest } from '@google/genai';
import { allOf, firstOf } from '../batch-lookups.ts';
import { readSpooledInput } from '../batch-spool.ts';
import { inlineBatchFiles, isRecord, resultObject, resultsFileOf, UNREADABLE_LINE } from '../inline-batch-files.ts';
import { decodeTag, encodeTag } from '../batch-tag.ts';
import { checkId, checkLookup, checkRequest } from '../call-checks.ts';
import { describeFailure, redact, type ProviderFailure } from '../provider-failure.ts';
import type { RetryContext, Attempt } from '../retry-policy.ts';
import type { BatchInfo, BatchLineResult, BatchProvider, BatchStatus, JsonCompletionRequest } from '../types.ts';
import type { Logger } from '../../shared/logger.ts';
import { classifyGoogleError } from './google-failure.ts';
import { generateParams, readGeminiContent, readGeminiUsage, type GenerateParams } from './google-message.ts';

/*
 * The Gemini Batch API behind the engine's batch operations (types.ts `BatchProvider`), with inline requests. It
 * differs from OpenAI's Batch API in ways the engine does not see:
 * - there are no files: the requests go in the create's body (at most 20 MB). The engine's "upload" spools them to a
 *   local file, `spool:<path>`, which the create reads and removes;
 * - a batch has no metadata, but it has a display name, which every list shows: the create writes the engine's tag
 *   there (batch-tag.ts), and the lookups by metadata read it back, running batches included. So a create whose
 *   answer was lost is adopted as OpenAI's is;
 * - a request is named by `metadata.key`, which holds the engine's custom id (the route);
 * - the results come inline, in the batch itself once it has ended, which the engine sees as the batch's output file
 *   `results:<batch name>`; deleting that file deletes the batch.
 */

/**
 * What one batch of inline requests may hold: 20 MB of request body. The engine counts the bytes of each request as
 * it builds it; the SDK then wraps each in its envelope (the key in `metadata`, the system instruction in parts,
 * under 100 bytes more), so 19,000,000 leaves room for the envelopes of the largest realistic part. No request
 * count is documented: the size binds first.
 */
const MAX_BYTES = 19_000_000;
const MAX_REQUESTS = 100_000;
/** The display name of a part's batch: the engine's tag, then this. */
const NAME_SUFFIX = 'part';
const LIST_PAGE_SIZE = 100;

/** One spooled request: the engine's custom id and the `generateContent` call it stands for. */
interface BatchLine {
	key: string;
	request: GenerateParams;
}

export interface GoogleBatchesOptions {
	client: GoogleGenAI;
	withRetries: <T>(context: RetryContext, attempt: () => Promise<Attempt<T>>) => Promise<T>;
	model: string;
	maxTokens: number;
	maxRetryAfterMs: number;
	secrets: readonly string[];
	logger: Logger;
	/** How many recent batches a lookup by metadata looks at, newest first. Default 1000. */
	maxBatchScan?: number;
}

/**
 * The batch operations of the Google provider, on the chat provider's client and retry policy.
 *
 * A lookup by metadata pages through the key's batches as the API lists them, which this module takes to be newest
 * first as at OpenAI and Anthropic, and looks at `maxBatchScan` of them at most.
 */
export function createGoogleBatches(options: GoogleBatchesOptions): BatchProvider {
	const { client, withRetries, model, maxTokens, maxRetryAfterMs, secrets, logger } = options;
	const maxBatchScan = options.maxBatchScan ?? 1000;
	let warnedScanLimit = false;
	const onlyRateLimits = (failure: ProviderFailure) => failure.reason === 'rate_limited';

	/** One SDK call under the shared policy; this SDK's errors are classified here, as the chat call's are. */
	function call<T>(context: RetryContext, run: () => Promise<T>): Promise<T> {
		return withRetries<T>(context, async () => {
			try {
				return { ok: true, value: await run() };
			} catch (error) {
				return { ok: false, failure: classifyGoogleError(error, secrets, false, maxRetryAfterMs) };
			}
		});
	}

	async function* batchesTagged(key: string, value: string): AsyncGenerator<BatchInfo> {
		checkLookup(key, value);
		let pageToken: string | undefined;
		let scanned = 0;
		while (scanned < maxBatchScan) {
			const pageSize = Math.min(LIST_PAGE_SIZE, maxBatchScan - scanned);
			const pager = await call({ op: 'list_batches', logContext: { pageToken } }, () => client.batches.list({ config: { pageSize, ...(pageToken !== undefined ? { pageToken } : {}) } }));
			const page = pager.page.slice(0, pageSize);
			for (const batch of page) {
				if (tagOf(batch)?.[key] === value) yield batchInfo(batch);
			}
			scanned += page.length;
			const next = (pager.params.config as { pageToken?: unknown } | undefined)?.pageToken;
			if (page.length === 0 || typeof next !== 'string' || next === '') return;
			pageToken = next;
		}
		// Google does not document the list's order: if it is not newest first, a key with this many batches may hide
		// the one a lookup is for. Said once per provider, so that an admin can tidy the key's batches up.
		if (!warnedScanLimit) {
			warnedScanLimit = true;
			logger.warn({ maxBatchScan }, 'pseo-automation: a lookup of Gemini batches stopped at its limit with more batches listed; lost creates among older ones are not adopted');
		}
	}

	// The last ended batch retrieved, results included: the engine reads its results right after the retrieve that
	// found it ended, and a part's results are megabytes that would otherwise be downloaded twice.
	let lastEnded: BatchJob | null = null;

	async function retrieve(name: string): Promise<BatchJob> {
		const batch = await call({ op: 'retrieve_batch', logContext: { batchId: name } }, () => client.batches.get({ name }));
		lastEnded = FINAL.has(statusOf(batch.state)) ? batch : null;
		return batch;
	}

	/** The results of an ended batch, one JSON line each: `{ key, response }` or `{ key, error }`. */
	async function* resultLines(name: string): AsyncGenerator<string> {
		const kept = lastEnded?.name === name ? lastEnded : null;
		lastEnded = null;
		const batch = kept ?? (await call({ op: 'file_content', logContext: { batchId: name } }, () => client.batches.get({ name })));
		for (const item of batch.dest?.inlinedResponses ?? []) {
			const key = typeof item.metadata?.['key'] === 'string' ? item.metadata['key'] : null;
			yield JSON.stringify({ key, ...(item.response ? { response: item.response } : {}), ...(item.error ? { error: item.error } : {}) });
		}
	}

	function parseLine(line: string): BatchLineResult {
		const parsed = resultObject(line);
		if (!parsed) return { ...UNREADABLE_LINE };
		const customId = typeof parsed['key'] === 'string' && parsed['key'] !== '' ? parsed['key'] : null;
		if (isRecord(parsed['response'])) {
			// Billed whether or not the answer is usable.
			const usage = readGeminiUsage(parsed['response']['usageMetadata']);
			const content = readGeminiContent(parsed['response'], secrets);
			if (customId === null) return { customId, ok: false, error: 'Batch result has no key', usage };
			if (!content.ok) return { customId, ok: false, error: describeFailure(content.failure, 1), usage };
			return { customId, ok: true, content: content.value, usage };
		}
		const error = isRecord(parsed['error']) ? parsed['error'] : {};
		const code = typeof error['status'] === 'string' ? error['status'] : typeof error['code'] === 'number' ? String(error['code']) : null;
		const message = typeof error['message'] === 'string' ? redact(error['message'], secrets) : '';
		return { customId, ok: false, error: `Batch request failed${code ? ` (${code})` : ''}${message ? `: ${message}` : ''}`, code };
	}

	return {
		...inlineBatchFiles({
			resultLines,
			async deleteBatch(name) {
				// Retried only after a 429, as every provider's delete: tidying up should not wait out an outage.
				await call({ op: 'delete_file', mayRetry: onlyRateLimits, logContext: { batchId: name } }, () => client.batches.delete({ name }));
			},
		}),
		limits: { maxRequests: MAX_REQUESTS, maxBytes: MAX_BYTES },
		// An ended batch stays at Google with its results until it is deleted, a cancelled twin's too.
		twinsDeletedOnceEnded: true,

		buildBatchLine(customId: string, request: JsonCompletionRequest): string {
			checkId('customId', customId);
			checkRequest(request);
			const line: BatchLine = { key: customId, request: generateParams(maxTokens, request) };
			return JSON.stringify(line);
		},

		async createBatch(inputFileId: string, metadata: Record<string, string>): Promise<BatchInfo> {
			checkId('inputFileId', inputFileId);
			// The body is built once, whole, as the API takes it: within 20 MB, which the limits keep it under.
			const batch = await readSpooledInput(inputFileId, async (lines) => {
				const displayName = `${encodeTag(metadata)}${NAME_SUFFIX}`;
				const src: InlinedRequest[] = [];
				for await (const line of lines) {
					const { key, request } = line as BatchLine;
					src.push({ contents: request.contents, config: request.config, metadata: { key } });
				}
				return call({ op: 'create_batch', mayRetry: onlyRateLimits, logContext: { requests: src.length } }, () =>
					client.batches.create({ model, src, config: { displayName } }),
				);
			});
			return batchInfo(batch);
		},

		findBatchByMetadata: (key: string, value: string) => firstOf(batchesTagged(key, value)),

		findBatchesByMetadata: (key: string, value: string) => allOf(batchesTagged(key, value)),

		async retrieveBatch(id: string): Promise<BatchInfo> {
			checkId('id', id);
			return batchInfo(await retrieve(id));
		},

		async cancelBatch(id: string): Promise<BatchInfo> {
			checkId('id', id);
			await call({ op: 'cancel_batch', logContext: { batchId: id } }, () => client.batches.cancel({ name: id }));
			return batchInfo(await retrieve(id));
		},

		parseBatchLine: parseLine,
	};
}

/** A batch as the engine knows it. Its requests' outcomes are counted from its results, which the SDK passes on. */
function batchInfo(batch: BatchJob): BatchInfo {
	const status = statusOf(batch.state);
	const responses = batch.dest?.inlinedResponses ?? [];
	const failed = responses.filter((item) => !item.response).length;
	return {
		id: batch.name ?? '',
		status,
		inputFileId: null,
		outputFileId: FINAL.has(status) && batch.name ? resultsFileOf(batch.name) : null,
		errorFileId: null,
		requestCounts: { total: responses.length, completed: responses.length - failed, failed },
		metadata: tagOf(batch) ?? {},
		errors: status === 'failed' ? [failureOf(batch)] : [],
		createdAt: secondsOf(batch.createTime),
	};
}

const FINAL: ReadonlySet<BatchStatus> = new Set(['completed', 'expired', 'cancelled', 'failed']);

/**
 * Why a batch failed. The SDK passes no reason on in the Gemini API's mode (its `batchJobFromMldev` drops the
 * operation's `error`), so this says what is known rather than nothing.
 */
function failureOf(batch: BatchJob): { code: string | null; message: string; line: null } {
	const error = batch.error;
	if (error?.message) return { code: error.code === undefined ? null : String(error.code), message: error.message.slice(0, 500), line: null };
	return { code: 'batch_failed', message: 'Gemini ended the batch as failed without a reason', line: null };
}

/** The engine's tag of a batch, read from its display name; null when it has none of ours. */
function tagOf(batch: BatchJob): Record<string, string> | null {
	const decoded = typeof batch.displayName === 'string' ? decodeTag(batch.displayName) : null;
	return decoded && decoded.customId === NAME_SUFFIX ? decoded.metadata : null;
}

/** A batch's state as the engine knows them; the SDK reads the API's `BATCH_STATE_*` as `JOB_STATE_*`. */
export function statusOf(state: string | undefined): BatchStatus {
	switch (state) {
		case 'JOB_STATE_PENDING':
		case 'JOB_STATE_QUEUED':
			return 'validating';
		case 'JOB_STATE_RUNNING':
			return 'in_progress';
		case 'JOB_STATE_SUCCEEDED':
		case 'JOB_STATE_PARTIALLY_SUCCEEDED':
			return 'completed';
		case 'JOB_STATE_CANCELLING':
			return 'cancelling';
		case 'JOB_STATE_CANCELLED':
			return 'cancelled';
		case 'JOB_STATE_EXPIRED':
			return 'expired';
		case 'JOB_STATE_FAILED':
			return 'failed';
		default:
			return (state ?? 'validating') as BatchStatus;
	}
}

function secondsOf(timestamp: string | undefined): number | null {
	const ms = timestamp === undefined ? Number.NaN : Date.parse(timestamp);
	return Number.isNaN(ms) ? null : Math.floor(ms / 1000);
}
