/**
 * Anthropic Message Batches: requests given inline, a batch that is `in_progress`, then `ended` (through `canceling`
 * when cancelled), and a JSONL of results, one per request. The batch knobs of the OpenAI side apply with their
 * closest meaning: `holdBatches`, `batchStepsPerPoll`, `batchEndState` (`expired` and `cancelled` answer the first
 * `batchPartialFraction` of the requests; `failed`, which this API has no batch state for, errors every request)
 * and `batchOutputOrder`.
 */
import { apiError, newId } from './chat.ts';
import type { ApiError, ChatRequest } from './chat.ts';
import type { BatchEndState, FakeConfig } from './config.ts';
import { ChunkWriter } from './files.ts';
import { anthropicErrorBody, parseMessagesRequest } from './anthropic-messages.ts';
import type { MessageOutcome } from './anthropic-messages.ts';

/** The wire shape of a message batch (`GET /v1/messages/batches/:id`). */
export interface MessageBatchObject {
	id: string;
	type: 'message_batch';
	processing_status: 'in_progress' | 'canceling' | 'ended';
	request_counts: { processing: number; succeeded: number; errored: number; canceled: number; expired: number };
	created_at: string;
	expires_at: string;
	ended_at: string | null;
	cancel_initiated_at: string | null;
	archived_at: null;
	results_url: string | null;
}

/** One request of a batch: its custom_id and either a valid request or the error it will end with. */
export interface MessageBatchLine {
	customId: string;
	request: ChatRequest | null;
	requestError: ApiError | null;
}

interface MessageBatchRecord {
	meta: MessageBatchObject;
	lines: MessageBatchLine[];
	results: Buffer[] | null;
	endState: BatchEndState;
	released: boolean;
	// Serialises status steps, so two concurrent retrieves never write the results twice.
	chain: Promise<unknown>;
}

type Failure = { ok: false; status: number; error: ApiError };
export type MessageBatchResult = { ok: true; batch: MessageBatchObject } | Failure;

/** The real API's limits on one batch. */
export const MAX_BATCH_BODY_BYTES = 256 * 1024 * 1024;
const MAX_REQUESTS = 100_000;
const CUSTOM_ID = /^[a-zA-Z0-9_-]{1,64}$/;
const DAY_MS = 24 * 3600 * 1000;
const YIELD_EVERY = 250;

function fail(status: number, message: string): Failure {
	return { ok: false, status, error: apiError(message) };
}

function isRecord(value: unknown): value is Record<string, unknown> {
	return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function rfc3339(ms: number): string {
	return new Date(ms).toISOString();
}

export interface AnthropicBatchStoreOptions {
	config: () => FakeConfig;
	/** The absolute URL of a batch's results on this server. */
	resultsUrl: (id: string) => string;
	/** Answers one request through the same path as `/v1/messages`. */
	answer: (request: ChatRequest, customId: string) => MessageOutcome;
	/** Called with a valid batch about to be stored; it throws the answer to send instead (nothing is stored then). */
	admit?: (batch: MessageBatchObject, lines: MessageBatchLine[]) => void;
}

export class AnthropicBatchStore {
	#batches = new Map<string, MessageBatchRecord>();
	#order: string[] = [];
	#options: AnthropicBatchStoreOptions;

	constructor(options: AnthropicBatchStoreOptions) {
		this.#options = options;
	}

	/**
	 * Validates the envelope (custom_ids, their uniqueness, the count) and stores an `in_progress` batch. A request
	 * whose params are invalid does not fail the create: it ends `errored`, as on the real service.
	 */
	create(body: unknown): (MessageBatchResult & { lines?: MessageBatchLine[] }) {
		if (!isRecord(body)) return fail(400, 'The request body must be a JSON object.');
		const { requests } = body;
		if (!Array.isArray(requests) || requests.length === 0) return fail(400, 'requests: at least one request is required');
		if (requests.length > MAX_REQUESTS) return fail(400, `requests: a batch holds at most ${MAX_REQUESTS} requests, got ${requests.length}`);
		const seen = new Set<string>();
		const lines: MessageBatchLine[] = [];
		for (const [index, item] of requests.entries()) {
			if (!isRecord(item)) return fail(400, `requests.${index}: Input should be an object`);
			const customId = item.custom_id;
			if (typeof customId !== 'string' || !CUSTOM_ID.test(customId)) {
				return fail(400, `requests.${index}.custom_id: String should match pattern '^[a-zA-Z0-9_-]{1,64}$'`);
			}
			if (seen.has(customId)) return fail(400, `requests.${index}.custom_id: Duplicate custom_id '${customId}'; each must be unique within the batch`);
			seen.add(customId);
			if (!isRecord(item.params)) return fail(400, `requests.${index}.params: Field required`);
			const parsed = parseMessagesRequest(item.params);
			lines.push({ customId, request: parsed.ok ? parsed.request : null, requestError: parsed.ok ? null : parsed.error });
		}
		const now = Date.now();
		const meta: MessageBatchObject = {
			id: newId('msgbatch_'),
			type: 'message_batch',
			processing_status: 'in_progress',
			request_counts: { processing: lines.length, succeeded: 0, errored: 0, canceled: 0, expired: 0 },
			created_at: rfc3339(now),
			expires_at: rfc3339(now + DAY_MS),
			ended_at: null,
			cancel_initiated_at: null,
			archived_at: null,
			results_url: null,
		};
		this.#options.admit?.(meta, lines);
		const record: MessageBatchRecord = { meta, lines, results: null, endState: this.#options.config().batchEndState, released: false, chain: Promise.resolve() };
		this.#batches.set(meta.id, record);
		this.#order.push(meta.id);
		return { ok: true, batch: meta, lines };
	}

	/** The batch after advancing it by `batchStepsPerPoll` steps (fewer when held or ended). */
	async retrieve(id: string): Promise<MessageBatchResult> {
		const record = this.#batches.get(id);
		if (!record) return this.#notFound(id);
		const steps = this.#options.config().batchStepsPerPoll;
		const run = record.chain.then(async () => {
			for (let i = 0; i < steps; i++) if (!(await this.#step(record))) break;
		});
		record.chain = run.catch(() => undefined);
		await run;
		return { ok: true, batch: record.meta };
	}

	/**
	 * A page of batches, newest first: the `limit` after `afterId` (older ones), or the `limit` just before
	 * `beforeId` (newer ones). `has_more` says whether more lie further in the direction of travel.
	 */
	list(limit: number, afterId: string | null, beforeId: string | null): { data: MessageBatchObject[]; has_more: boolean } {
		const newestFirst = [...this.#order].reverse();
		let ids: string[];
		let hasMore: boolean;
		if (beforeId !== null) {
			const end = newestFirst.indexOf(beforeId);
			if (end === -1) return { data: [], has_more: false };
			ids = newestFirst.slice(Math.max(0, end - limit), end);
			hasMore = end - limit > 0;
		} else {
			const start = afterId === null ? 0 : newestFirst.indexOf(afterId) + 1;
			if (afterId !== null && start === 0) return { data: [], has_more: false };
			ids = newestFirst.slice(start, start + limit);
			hasMore = start + limit < newestFirst.length;
		}
		const data = ids.map((id) => this.#batches.get(id)?.meta).filter((meta): meta is MessageBatchObject => meta !== undefined);
		return { data, has_more: hasMore };
	}

	/** Moves an `in_progress` batch to `canceling`; the next retrieve ends it with the unanswered requests canceled. */
	async cancel(id: string): Promise<MessageBatchResult> {
		const record = this.#batches.get(id);
		if (!record) return this.#notFound(id);
		await record.chain;
		const { meta } = record;
		if (meta.processing_status === 'ended') return fail(400, `Batch ${id} has ended and can no longer be canceled.`);
		if (meta.processing_status === 'in_progress') {
			meta.processing_status = 'canceling';
			meta.cancel_initiated_at = rfc3339(Date.now());
		}
		return { ok: true, batch: meta };
	}

	/** Forgets an ended batch and its results; a running one must be canceled first. */
	async delete(id: string): Promise<{ ok: true; deleted: { id: string; type: 'message_batch_deleted' } } | Failure> {
		const record = this.#batches.get(id);
		if (!record) return this.#notFound(id);
		await record.chain;
		if (record.meta.processing_status !== 'ended') {
			return fail(400, `Batch ${id} cannot be deleted while it is ${record.meta.processing_status}; cancel it and wait for it to end.`);
		}
		this.#batches.delete(id);
		this.#order = this.#order.filter((other) => other !== id);
		return { ok: true, deleted: { id, type: 'message_batch_deleted' } };
	}

	/** The JSONL results of an ended batch. */
	results(id: string): { ok: true; chunks: Buffer[] } | Failure {
		const record = this.#batches.get(id);
		if (!record) return this.#notFound(id);
		if (record.results === null) return fail(404, `Results for batch ${id} are not available until it has ended.`);
		return { ok: true, chunks: record.results };
	}

	/** Lets every existing batch leave `in_progress`; returns how many were held there. */
	release(): number {
		let held = 0;
		for (const record of this.#batches.values()) {
			if (!record.released && record.meta.processing_status === 'in_progress' && this.#options.config().holdBatches) held++;
			record.released = true;
		}
		return held;
	}

	clear(): void {
		this.#batches.clear();
		this.#order = [];
	}

	#notFound(id: string): Failure {
		return fail(404, `No message batch found with id '${id}'.`);
	}

	/** One status step; false when the batch cannot move now. */
	async #step(record: MessageBatchRecord): Promise<boolean> {
		const { meta } = record;
		switch (meta.processing_status) {
			case 'in_progress':
				if (this.#options.config().holdBatches && !record.released) return false;
				if (record.endState === 'cancelled') {
					meta.processing_status = 'canceling';
					meta.cancel_initiated_at = rfc3339(Date.now());
				} else {
					await this.#finish(record, record.endState);
				}
				return true;
			case 'canceling':
				await this.#finish(record, 'cancelled');
				return true;
			default:
				return false;
		}
	}

	/**
	 * Answers the requests and writes one result line each. A completed batch answers every request; an expired
	 * or canceled one the first `batchPartialFraction` of them, the rest being `expired` or `canceled`.
	 */
	async #finish(record: MessageBatchRecord, final: BatchEndState): Promise<void> {
		const config = this.#options.config();
		const { meta, lines } = record;
		const partial = final === 'expired' || final === 'cancelled';
		const answered = partial ? Math.floor(lines.length * config.batchPartialFraction) : lines.length;
		const counts = { processing: 0, succeeded: 0, errored: 0, canceled: 0, expired: 0 };
		const output = new ChunkWriter();
		for (let n = 0; n < lines.length; n++) {
			if (n > 0 && n % YIELD_EVERY === 0) await new Promise((resolve) => setImmediate(resolve));
			const index = config.batchOutputOrder === 'reversed' ? lines.length - 1 - n : n;
			const line = lines[index];
			if (!line) continue;
			let result: unknown;
			if (index >= answered) {
				result = final === 'expired' ? { type: 'expired' } : { type: 'canceled' };
				counts[final === 'expired' ? 'expired' : 'canceled']++;
			} else {
				const outcome: MessageOutcome = final === 'failed'
					? { ok: false, status: 500, error: apiError('Internal server error') }
					: line.request
						? this.#options.answer(line.request, line.customId)
						: { ok: false, status: 400, error: line.requestError ?? apiError('Invalid request.') };
				if (outcome.ok) {
					result = { type: 'succeeded', message: outcome.message };
					counts.succeeded++;
				} else {
					result = { type: 'errored', error: anthropicErrorBody(outcome.status, outcome.error.message) };
					counts.errored++;
				}
			}
			output.writeLine(JSON.stringify({ custom_id: line.customId, result }));
		}
		record.results = output.finish().chunks;
		// The answers are in the results now; the parsed requests are no longer needed.
		record.lines = [];
		meta.request_counts = counts;
		meta.processing_status = 'ended';
		meta.ended_at = rfc3339(Date.now());
		meta.results_url = this.#options.resultsUrl(meta.id);
	}
}
