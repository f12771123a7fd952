import type Anthropic from '@anthropic-ai/sdk';
import type { Logger } from '../../shared/logger.ts';
import { readSpooledInput } from '../batch-spool.ts';
import { inlineBatchFiles, isRecord, resultObject, resultsFileOf, UNREADABLE_LINE } from '../inline-batch-files.ts';
import { decodeTag, encodeTag } from '../batch-tag.ts';
import { checkId, checkLookup, checkRequest } from '../call-checks.ts';
import { ProviderCallError } from '../provider-call-error.ts';
import { classifyError, describeFailure, redact, type ProviderFailure } from '../provider-failure.ts';
import { neverRepeated, type RetryContext, type Attempt } from '../retry-policy.ts';
import type { BatchInfo, BatchLineResult, BatchProvider, BatchStatus, JsonCompletionRequest } from '../types.ts';
import { messageParams, readMessageContent, readMessageUsage } from './anthropic-message.ts';
import { allOf, firstOf } from '../batch-lookups.ts';

/*
 * Anthropic's Message Batches API behind the engine's batch operations (types.ts `BatchProvider`). It differs from
 * OpenAI's Batch API in four ways the engine does not see:
 * - there are no files: the requests go in the create's body. The engine's "upload" spools them to a local file,
 *   `spool:<path>`, which the create reads and removes;
 * - a custom id is `[a-zA-Z0-9_-]{1,64}`: a line is named by its route's position (`p<position>`), not its route;
 * - a batch has no metadata: the create writes what the engine tags it with at the head of every custom id (see
 *   `encodeTag`), and the lookups by metadata read it back from the first result of a batch;
 * - the results are one JSONL, readable once the batch has ended, which the engine sees as the batch's output file
 *   `results:<batch id>`; deleting that file deletes the batch, which Anthropic allows once it has ended.
 */

/** What one message batch may hold: 100,000 requests, and a body of 256 MB. */
const MAX_REQUESTS = 100_000;
/**
 * The engine counts the bytes of each request as it builds it; the create then adds the tag to every custom id (at
 * most 50 bytes each, 5 MB for a full batch) and the body's envelope. 256,000,000 leaves those 12 MB below Anthropic's
 * 256 MiB.
 */
const MAX_BYTES = 256_000_000;
const CUSTOM_ID = /^[a-zA-Z0-9_-]{1,64}$/;
const LIST_PAGE_SIZE = 100;
/** Batches whose tag is remembered: a step's lookups page through the same recent batches again and again. */
const REMEMBERED_TAGS = 2000;


export interface AnthropicBatchesOptions {
	client: Anthropic;
	withRetries: <T>(context: RetryContext, attempt: () => Promise<Attempt<T>>) => Promise<T>;
	model: string;
	maxTokens: number;
	secrets: readonly string[];
	logger: Logger;
	/** How many recent batches a lookup by metadata looks at, newest first. Default 1000. */
	maxBatchScan?: number;
}

/**
 * The batch operations of the Anthropic provider, on the chat provider's client and retry policy.
 *
 * The limit of a provider without metadata: a lookup by metadata can only match a batch that has ended (its first
 * result carries the tag) or that this instance created. A create whose answer was lost while its batch still runs
 * is therefore not adopted: the part is submitted again, and the earlier batch runs beside it as a twin, found and
 * deleted once it has ended and a lookup meets it (batch-runner.ts looks again once the part is ingested). A cancel
 * cannot stop such a batch either. Its cost is the price of that rare loss.
 */
export function createAnthropicBatches(options: AnthropicBatchesOptions): BatchProvider {
	const { client, withRetries, model, maxTokens, secrets, logger } = options;
	const maxBatchScan = options.maxBatchScan ?? 1000;
	const onlyRateLimits = (failure: ProviderFailure) => failure.reason === 'rate_limited';
	// Tags read back (or written) per batch id, oldest first, so that a lookup downloads a batch's first result once.
	const tags = new Map<string, Record<string, string>>();
	const remember = (id: string, metadata: Record<string, string>) => {
		tags.delete(id);
		tags.set(id, metadata);
		while (tags.size > REMEMBERED_TAGS) tags.delete(tags.keys().next().value!);
	};

	function batchInfo(batch: Anthropic.Messages.MessageBatch): BatchInfo {
		const counts = batch.request_counts;
		const ended = batch.processing_status === 'ended';
		return {
			id: batch.id,
			status: statusOf(batch),
			inputFileId: null,
			outputFileId: ended ? resultsFileOf(batch.id) : null,
			errorFileId: null,
			requestCounts: {
				total: counts.processing + counts.succeeded + counts.errored + counts.canceled + counts.expired,
				completed: counts.succeeded,
				failed: counts.errored + counts.canceled + counts.expired,
			},
			metadata: { ...(tags.get(batch.id) ?? {}) },
			errors: [],
			createdAt: secondsOf(batch.created_at),
		};
	}

	/** The tag of an ended batch, read from its first result; null when it has none of ours. */
	async function tagOf(batch: Anthropic.Messages.MessageBatch): Promise<Record<string, string> | null> {
		const known = tags.get(batch.id);
		if (known) return known;
		if (batch.processing_status !== 'ended') return null;
		let first: string | null = null;
		try {
			for await (const line of resultLines(batch.id)) {
				first = line;
				break;
			}
		} catch (error) {
			// Deleted between the list and the read: it runs nothing any more, and nothing will adopt it.
			if (error instanceof ProviderCallError && error.status === 404) return null;
			throw error;
		}
		const customId = first === null ? null : customIdOf(first);
		const metadata = (customId === null ? null : decodeTag(customId)?.metadata) ?? {};
		remember(batch.id, metadata);
		return metadata;
	}

	async function* batchesTagged(key: string, value: string): AsyncGenerator<BatchInfo> {
		checkLookup(key, value);
		let after: string | undefined;
		let scanned = 0;
		while (scanned < maxBatchScan) {
			const limit = Math.min(LIST_PAGE_SIZE, maxBatchScan - scanned);
			const page = await withRetries({ op: 'list_batches', logContext: { after } }, async () => ({
				ok: true as const,
				value: await client.messages.batches.list({ limit, ...(after !== undefined ? { after_id: after } : {}) }),
			}));
			for (const batch of page.data.slice(0, limit)) {
				const tag = await tagOf(batch);
				if (tag?.[key] === value) yield batchInfo(batch);
			}
			scanned += page.data.length;
			const last = page.data.at(-1)?.id;
			if (!page.has_more || page.data.length === 0 || last === undefined) break;
			after = last;
		}
	}

	/** The results of an ended batch, one JSON line each, read as they arrive. */
	async function* resultLines(batchId: string): AsyncGenerator<string> {
		const decoder = await withRetries({ op: 'file_content', logContext: { batchId } }, async () => ({
			ok: true as const,
			value: await client.messages.batches.results(batchId),
		}));
		try {
			// The SDK parses each line; it is written back as one line, which the engine reads as it reads OpenAI's.
			for await (const result of decoder) yield JSON.stringify(result);
		} catch (error) {
			if (error instanceof ProviderCallError) throw error;
			const failure = classifyError(error, secrets);
			logger.warn({ op: 'file_content', batchId, reason: failure.reason }, 'pseo-automation: reading the results of a message batch failed');
			throw new ProviderCallError(`Reading the results of message batch ${batchId} failed midway`, { reason: failure.reason, retryable: true });
		} finally {
			// A reader that stops early (a lookup reads one line) closes the download.
			decoder.controller.abort();
		}
	}

	function parseLine(line: string): BatchLineResult {
		const parsed = resultObject(line);
		if (!parsed) return { ...UNREADABLE_LINE };
		const raw = typeof parsed['custom_id'] === 'string' ? parsed['custom_id'] : '';
		const customId = raw === '' ? null : (decodeTag(raw)?.customId ?? raw);
		const result = isRecord(parsed['result']) ? parsed['result'] : {};
		switch (result['type']) {
			case 'succeeded': {
				// Billed whether or not the answer is usable.
				const message = result['message'];
				const usage = readMessageUsage(isRecord(message) ? message['usage'] : null);
				const content = readMessageContent(message, secrets);
				if (customId === null) return { customId, ok: false, error: 'Batch result has no custom_id', usage };
				if (!content.ok) return { customId, ok: false, error: describeFailure(content.failure, 1), usage };
				return { customId, ok: true, content: content.value, usage };
			}
			case 'errored': {
				const body = isRecord(result['error']) ? result['error'] : {};
				const error = isRecord(body['error']) ? body['error'] : body;
				const code = typeof error['type'] === 'string' ? error['type'] : null;
				const message = typeof error['message'] === 'string' ? redact(error['message'], secrets) : '';
				return { customId, ok: false, error: `Batch request failed${code ? ` (${code})` : ''}${message ? `: ${message}` : ''}`, code };
			}
			case 'canceled':
				return { customId, ok: false, error: 'The provider batch was cancelled before this request ran.', code: 'batch_cancelled', unanswered: true };
			case 'expired':
				return { customId, ok: false, error: 'The provider batch expired before this request ran.', code: 'batch_expired', unanswered: true };
			default:
				return { customId, ok: false, error: 'Batch result has no known type' };
		}
	}

	return {
		...inlineBatchFiles({
			resultLines,
			async deleteBatch(batchId) {
				// Retried only after a 429, as every provider's delete: tidying up should not wait out an outage.
				try {
					await withRetries({ op: 'delete_file', mayRetry: onlyRateLimits, logContext: { batchId } }, async () => ({
						ok: true as const,
						value: await client.messages.batches.delete(batchId),
					}));
				} finally {
					tags.delete(batchId);
				}
			},
		}),
		twinsDeletedOnceEnded: true,
		limits: { maxRequests: MAX_REQUESTS, maxBytes: MAX_BYTES },

		customIdFor(route: string, position: number): string {
			if (!Number.isSafeInteger(position) || position < 0) throw new TypeError(`Expected \`position\` to be an integer >= 0, got \`${String(position)}\``);
			return `p${position}`;
		},

		buildBatchLine(customId: string, request: JsonCompletionRequest): string {
			if (typeof customId !== 'string' || !CUSTOM_ID.test(customId)) {
				throw new TypeError(`Expected \`customId\` to match ${CUSTOM_ID}, got \`${String(customId)}\``);
			}
			checkRequest(request);
			return JSON.stringify({ custom_id: customId, params: messageParams(model, maxTokens, request) });
		},

		async createBatch(inputFileId: string, metadata: Record<string, string>): Promise<BatchInfo> {
			checkId('inputFileId', inputFileId);
			// The body is built once, whole, as the API takes it: within 256 MB, which the limits keep it under. The tag is
			// encoded inside the read, so that a refused one still removes the spool.
			return readSpooledInput(inputFileId, async (lines) => {
				const tag = encodeTag(metadata);
				const requests: { custom_id: string; params: Anthropic.Messages.MessageCreateParamsNonStreaming }[] = [];
				for await (const line of lines) {
					const request = line as { custom_id: string; params: Anthropic.Messages.MessageCreateParamsNonStreaming };
					const customId = `${tag}${request.custom_id}`;
					if (!CUSTOM_ID.test(customId)) throw new TypeError(`Expected the tagged custom id \`${customId}\` to match ${CUSTOM_ID}`);
					requests.push({ custom_id: customId, params: request.params });
				}
				const batch = await withRetries({ op: 'create_batch', mayRetry: neverRepeated, logContext: { requests: requests.length } }, async () => ({
					ok: true as const,
					value: await client.messages.batches.create({ requests }),
				}));
				remember(batch.id, { ...decodeTag(`${tag}x`)!.metadata });
				return batchInfo(batch);
			});
		},

		findBatchByMetadata: (key: string, value: string) => firstOf(batchesTagged(key, value)),

		findBatchesByMetadata: (key: string, value: string) => allOf(batchesTagged(key, value)),

		async retrieveBatch(id: string): Promise<BatchInfo> {
			checkId('id', id);
			const batch = await withRetries({ op: 'retrieve_batch', logContext: { batchId: id } }, async () => ({
				ok: true as const,
				value: await client.messages.batches.retrieve(id),
			}));
			return batchInfo(batch);
		},

		async cancelBatch(id: string): Promise<BatchInfo> {
			checkId('id', id);
			const batch = await withRetries({ op: 'cancel_batch', logContext: { batchId: id } }, async () => ({
				ok: true as const,
				value: await client.messages.batches.cancel(id),
			}));
			return batchInfo(batch);
		},

		parseBatchLine: parseLine,
	};
}

/**
 * A batch's state as the engine knows them. An ended batch is `cancelled` when a cancel was asked for, `expired` when
 * any request expired (Anthropic expires requests only when their batch reached its 24 hours), else `completed`:
 * what its requests came to is read from its results.
 */
export function statusOf(batch: Pick<Anthropic.Messages.MessageBatch, 'processing_status' | 'cancel_initiated_at' | 'request_counts'>): BatchStatus {
	switch (batch.processing_status) {
		case 'in_progress':
			return 'in_progress';
		case 'canceling':
			return 'cancelling';
		case 'ended':
			if (batch.cancel_initiated_at) return 'cancelled';
			return batch.request_counts.expired > 0 ? 'expired' : 'completed';
		default:
			return batch.processing_status as BatchStatus;
	}
}

function customIdOf(line: string): string | null {
	const customId = resultObject(line)?.['custom_id'];
	return typeof customId === 'string' ? customId : null;
}

function secondsOf(timestamp: string): number | null {
	const ms = Date.parse(timestamp);
	return Number.isNaN(ms) ? null : Math.floor(ms / 1000);
}
