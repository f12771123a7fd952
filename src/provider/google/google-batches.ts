import type { BatchJob, GoogleGenAI } from '@google/genai';
import { allOf, firstOf } from '../batch-lookups.ts';
import { removeSpool, spoolPathOf } from '../batch-spool.ts';
import { isRecord, resultObject, UNREADABLE_LINE } from '../inline-batch-files.ts';
import { decodeTag, encodeTag } from '../batch-tag.ts';
import { checkId, checkLookup, checkRequest } from '../call-checks.ts';
import { ProviderCallError } from '../provider-call-error.ts';
import { describeFailure, redact, type ProviderFailure } from '../provider-failure.ts';
import { neverRepeated, type RetryContext, type Attempt } from '../retry-policy.ts';
import type { BatchInfo, BatchLineResult, BatchProvider, BatchStatus, JsonCompletionRequest } from '../types.ts';
import { classifyGoogleError } from './google-failure.ts';
import { createGoogleFiles, FILE_NAME, secondsOf, type GoogleConnection } from './google-files.ts';
import { generateParams, generateRequest, readGeminiContent, readGeminiUsage, type GenerateContentRequest } from './google-message.ts';

/*
 * The Gemini Batch API behind the engine's batch operations (types.ts `BatchProvider`), with an input file. It
 * differs from OpenAI's Batch API in ways the engine does not see:
 * - a part's requests go up through the Files API as a JSONL file of `{ key, request }` lines, the format Google
 *   documents for a batch's input file (google-files.ts), and the batch is created with that file as its source;
 * - a batch has no metadata, but it has a display name, which every list shows: the create writes the engine's tag
 *   there (batch-tag.ts), then `part:` and the input file, and the lookups by metadata read both back, running
 *   batches included. So a create whose answer was lost is adopted as OpenAI's is, and its input file is known to
 *   be deleted with it (the SDK passes no batch's source on);
 * - a request is named by its line's `key`, which holds the engine's custom id (the route);
 * - an ended batch names its results file (`dest.fileName`), JSONL of `{ key, response }` or `{ key, error }`: the
 *   engine sees it as the batch's output file `results:<batch name>:<file name>`, streamed line by line, and
 *   deleting that deletes the file, then the batch. An ended batch stays listed until it is deleted, and every lookup
 *   pages through the list.
 * A batch created before the Files API was used (its requests inline in the create, its display name ending in
 * `part`, its results inline in the batch) is still read: its output file is `results:<batch name>`, read from the
 * batch, and its input file a local spool that was removed at the create.
 */

/**
 * What one batch may hold: an input file of 2 GB, Google documents. The engine counts a part's bytes as the lines of
 * that very file, so 1,800,000,000 keeps under 2 GB, whether Google means 2·10⁹ bytes or 2 GiB, with room to spare. No
 * request count is documented: the size binds first.
 */
const MAX_BYTES = 1_800_000_000;
const MAX_REQUESTS = 100_000;
/** The display name of a part's batch: the engine's tag, then this, then `:` and its input file. */
const NAME_SUFFIX = 'part';
const FILE = FILE_NAME.source.slice(1, -1);
/** What follows the tag in a display name: `part` alone for a batch of inline requests. */
const SUFFIX = new RegExp(`^${NAME_SUFFIX}(?::(${FILE}))?$`);
/** The engine's output file of an ended batch: `results:<batch name>`, then `:<results file>` when it has one. */
const RESULTS = new RegExp(`^results:(batches/[^:]+)(?::(${FILE}))?$`);
const LIST_PAGE_SIZE = 100;

/** One line of a part's input file: the engine's custom id, and the `generateContent` request it stands for. */
interface BatchLine {
	key: string;
	request: GenerateContentRequest;
}

/** The batch operations' options; the connection is what a results file's download needs besides the SDK (google-files.ts). */
export interface GoogleBatchesOptions extends GoogleConnection {
	client: GoogleGenAI;
	withRetries: <T>(context: RetryContext, attempt: () => Promise<Attempt<T>>) => Promise<T>;
	model: string;
	maxTokens: number;
	maxRetryAfterMs: number;
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

	const files = createGoogleFiles({ ...options, call });

	async function* batchesTagged(key: string, value: string): AsyncGenerator<BatchInfo> {
		checkLookup(key, value);
		let pageToken: string | undefined;
		let scanned = 0;
		while (scanned < maxBatchScan) {
			const pageSize = Math.min(LIST_PAGE_SIZE, maxBatchScan - scanned);
			const pager = await call({ op: 'list_batches', logContext: { pageToken } }, () => client.batches.list({ config: { pageSize, ...(pageToken !== undefined ? { pageToken } : {}) } }));
			const page = pager.page.slice(0, pageSize);
			for (const batch of page) {
				if (tagOf(batch)?.metadata[key] === value) yield batchInfo(batch);
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

	// The last ended batch of inline requests retrieved, results included: the engine reads its results right after
	// the retrieve that found it ended, and they are megabytes that would otherwise be downloaded twice.
	let lastEnded: BatchJob | null = null;

	async function retrieve(name: string): Promise<BatchJob> {
		const batch = await call({ op: 'retrieve_batch', logContext: { batchId: name } }, () => client.batches.get({ name }));
		lastEnded = FINAL.has(statusOf(batch.state)) && batch.dest?.inlinedResponses ? batch : null;
		return batch;
	}

	/**
	 * The results of an ended batch whose output file names no results file, one JSON line each: from its results file
	 * if it has one by now, else its inline results, put in the lines of a results file (`{ key, response }` or
	 * `{ key, error }`), the request's key coming from its metadata.
	 */
	async function* batchResults(name: string): AsyncGenerator<string> {
		const kept = lastEnded?.name === name ? lastEnded : null;
		lastEnded = null;
		const batch = kept ?? (await call({ op: 'file_content', logContext: { batchId: name } }, () => client.batches.get({ name })));
		const resultsFile = batch.dest?.fileName;
		if (resultsFile !== undefined && FILE_NAME.test(resultsFile)) {
			yield* files.lines(resultsFile);
			return;
		}
		for (const item of batch.dest?.inlinedResponses ?? []) {
			const key = typeof item.metadata?.['key'] === 'string' ? item.metadata['key'] : null;
			yield JSON.stringify({ key, ...(item.response ? { response: item.response } : {}), ...(item.error ? { error: item.error } : {}) });
		}
	}

	async function deleteBatch(name: string): Promise<void> {
		try {
			// Retried only after a 429, as every provider's delete: tidying up should not wait out an outage.
			await call({ op: 'delete_file', mayRetry: onlyRateLimits, logContext: { batchId: name } }, () => client.batches.delete({ name }));
		} catch (error) {
			// Already gone: what was asked for holds.
			if (!(error instanceof ProviderCallError && error.status === 404)) throw error;
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
		limits: { maxRequests: MAX_REQUESTS, maxBytes: MAX_BYTES },
		// An ended batch stays at Google, listed, until it is deleted, a cancelled twin's too.
		twinsDeletedOnceEnded: true,

		buildBatchLine(customId: string, request: JsonCompletionRequest): string {
			checkId('customId', customId);
			checkRequest(request);
			const line: BatchLine = { key: customId, request: generateRequest(generateParams(maxTokens, request)) };
			return JSON.stringify(line);
		},

		async uploadBatchFile(lines: string[] | AsyncIterable<string>, filename: string): Promise<string> {
			if (typeof filename !== 'string' || filename.trim() === '') {
				throw new TypeError(`Expected \`filename\` to be a non-empty string, got \`${String(filename)}\` (${typeof filename})`);
			}
			// The engine's file name is the upload's display name: the sweep of files left at the provider reads it.
			return files.upload(lines, filename);
		},

		async createBatch(inputFileId: string, metadata: Record<string, string>): Promise<BatchInfo> {
			if (typeof inputFileId !== 'string' || !FILE_NAME.test(inputFileId)) {
				throw new TypeError(`Expected \`inputFileId\` to be an uploaded file (\`files/...\`), got \`${String(inputFileId)}\``);
			}
			const displayName = `${encodeTag(metadata)}${NAME_SUFFIX}:${inputFileId}`;
			const batch = await call({ op: 'create_batch', mayRetry: neverRepeated, logContext: { inputFileId } }, () =>
				client.batches.create({ model, src: inputFileId, config: { displayName } }),
			);
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

		async deleteFile(fileId: string): Promise<void> {
			checkId('fileId', fileId);
			// The input of a part submitted before the Files API was used: a local spool, removed at its create.
			const spooled = spoolPathOf(fileId);
			if (spooled !== null) return removeSpool(spooled);
			if (FILE_NAME.test(fileId)) return files.remove(fileId);
			const results = RESULTS.exec(fileId);
			if (!results) throw new TypeError(`Expected \`fileId\` to be a file or the results of a batch, got \`${fileId}\``);
			// The file first: once its batch is gone, nothing names it any more.
			if (results[2] !== undefined) await files.remove(results[2]);
			await deleteBatch(results[1]!);
		},

		listBatchFiles: () => files.list(),

		streamFileLines(fileId: string): AsyncIterable<string> {
			checkId('fileId', fileId);
			const results = RESULTS.exec(fileId);
			if (!results) throw new TypeError(`Expected \`fileId\` to be the results of a batch, got \`${fileId}\``);
			return results[2] !== undefined ? files.lines(results[2]) : batchResults(results[1]!);
		},

		parseBatchLine: parseLine,
	};
}

/**
 * A batch as the engine knows it. The SDK passes on neither a batch's source nor its request counts: the input file
 * is read from the display name, and only a batch of inline requests is counted, from its results.
 */
function batchInfo(batch: BatchJob): BatchInfo {
	const status = statusOf(batch.state);
	const tag = tagOf(batch);
	const responses = batch.dest?.inlinedResponses ?? [];
	const failed = responses.filter((item) => !item.response).length;
	const resultsFile = batch.dest?.fileName;
	return {
		id: batch.name ?? '',
		status,
		inputFileId: tag?.inputFileId ?? null,
		outputFileId: FINAL.has(status) && batch.name ? `results:${batch.name}${resultsFile !== undefined && FILE_NAME.test(resultsFile) ? `:${resultsFile}` : ''}` : null,
		errorFileId: null,
		requestCounts: { total: responses.length, completed: responses.length - failed, failed },
		metadata: tag?.metadata ?? {},
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

/** The engine's tag of a batch and its input file, read from its display name; null when it has none of ours. */
function tagOf(batch: BatchJob): { metadata: Record<string, string>; inputFileId: string | null } | null {
	const decoded = typeof batch.displayName === 'string' ? decodeTag(batch.displayName) : null;
	const suffix = decoded ? SUFFIX.exec(decoded.customId) : null;
	return decoded && suffix ? { metadata: decoded.metadata, inputFileId: suffix[1] ?? null } : null;
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
