/**
 * Batches of chat completions: validation of the input file, the status progression driven by retrieves, holds,
 * forced end states, and the output and error files written when a batch ends.
 */
import { apiError, newId, parseChatRequest } from './chat.ts';
import type { ApiError, ChatOutcome, ChatRequest } from './chat.ts';
import type { BatchEndState, FakeConfig } from './config.ts';
import { ChunkWriter } from './files.ts';
import type { FileStore } from './files.ts';

type BatchStatus = 'validating' | 'failed' | 'in_progress' | 'finalizing' | 'completed' | 'expired' | 'cancelling' | 'cancelled';

interface BatchErrorItem {
	code: string;
	line: number | null;
	message: string;
	param: string | null;
}

/** The wire shape of a batch (`GET /v1/batches/:id`). */
export interface BatchObject {
	id: string;
	object: 'batch';
	endpoint: string;
	errors: { object: 'list'; data: BatchErrorItem[] } | null;
	input_file_id: string;
	completion_window: string;
	status: BatchStatus;
	output_file_id: string | null;
	error_file_id: string | null;
	created_at: number;
	in_progress_at: number | null;
	expires_at: number;
	finalizing_at: number | null;
	completed_at: number | null;
	failed_at: number | null;
	expired_at: number | null;
	cancelling_at: number | null;
	cancelled_at: number | null;
	request_counts: { total: number; completed: number; failed: number };
	metadata: Record<string, string> | null;
	model: string | null;
	usage: {
		input_tokens: number;
		input_tokens_details: { cached_tokens: number };
		output_tokens: number;
		output_tokens_details: { reasoning_tokens: number };
		total_tokens: number;
	} | null;
}

/** One input line: its custom_id and either a valid request or the 400 it earns. */
export interface BatchLine {
	customId: string;
	request: ChatRequest | null;
	requestError: ApiError | null;
}

interface BatchRecord {
	meta: BatchObject;
	lines: BatchLine[];
	validationErrors: BatchErrorItem[];
	endState: BatchEndState;
	released: boolean;
	// Serialises status steps, so two concurrent retrieves never write the output twice.
	chain: Promise<unknown>;
}

export type BatchResult = { ok: true; batch: BatchObject } | { ok: false; status: number; error: ApiError };

const SUPPORTED_ENDPOINT = '/v1/chat/completions';
const DAY_S = 24 * 3600;
const YIELD_EVERY = 250;

function nowS(): number {
	return Math.floor(Date.now() / 1000);
}

function isRecord(value: unknown): value is Record<string, unknown> {
	return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function fail(status: number, message: string, param: string | null = null): { ok: false; status: number; error: ApiError } {
	return { ok: false, status, error: apiError(message, 'invalid_request_error', null, param) };
}

/** Parses an input file into lines and the validation errors that fail the batch. */
function parseBatchInput(text: string, endpoint: string): { lines: BatchLine[]; errors: BatchErrorItem[] } {
	const lines: BatchLine[] = [];
	const errors: BatchErrorItem[] = [];
	const seen = new Set<string>();
	const models = new Set<string>();
	const rows = text.split('\n');
	for (let i = 0; i < rows.length; i++) {
		const row = rows[i]?.trim() ?? '';
		if (row === '') continue;
		const lineNumber = i + 1;
		let parsed: unknown;
		try {
			parsed = JSON.parse(row);
		} catch {
			errors.push({ code: 'invalid_json_line', line: lineNumber, message: 'This line is not parseable as valid JSON.', param: null });
			continue;
		}
		if (!isRecord(parsed) || typeof parsed.custom_id !== 'string' || parsed.custom_id === '') {
			errors.push({ code: 'missing_required_parameter', line: lineNumber, message: 'Missing required parameter: custom_id.', param: 'custom_id' });
			continue;
		}
		if (seen.has(parsed.custom_id)) {
			errors.push({
				code: 'duplicate_custom_id',
				line: lineNumber,
				message: 'The custom_id for this request is a duplicate of another request. The custom_id parameter must be unique for each request in a batch.',
				param: 'custom_id',
			});
			continue;
		}
		seen.add(parsed.custom_id);
		if (parsed.method !== 'POST') {
			errors.push({ code: 'invalid_method', line: lineNumber, message: 'The method must be POST.', param: 'method' });
			continue;
		}
		if (parsed.url !== endpoint) {
			errors.push({ code: 'invalid_url', line: lineNumber, message: `The url must match the batch endpoint ${endpoint}.`, param: 'url' });
			continue;
		}
		const request = parseChatRequest(parsed.body);
		if (request.ok) models.add(request.request.model);
		lines.push({ customId: parsed.custom_id, request: request.ok ? request.request : null, requestError: request.ok ? null : request.error });
	}
	if (lines.length === 0 && errors.length === 0) {
		errors.push({ code: 'empty_file', line: null, message: 'The input file contains no requests.', param: null });
	}
	if (models.size > 1) {
		errors.push({ code: 'model_mismatch', line: null, message: 'Each input file can only include requests to a single model.', param: 'model' });
	}
	return { lines, errors };
}

export interface BatchStoreOptions {
	files: FileStore;
	config: () => FakeConfig;
	/** Answers one line through the same path as chat completions. */
	answer: (request: ChatRequest, customId: string) => ChatOutcome;
	/**
	 * Called at create with a batch whose file passed validation: the error it returns fails the batch at its
	 * validation step instead (OpenAI accepts a batch over the enqueued-token limit, then fails it so).
	 */
	admit?: (batch: BatchObject, lines: BatchLine[]) => BatchErrorItem | null;
}

export class BatchStore {
	#batches = new Map<string, BatchRecord>();
	#order: string[] = [];
	#options: BatchStoreOptions;

	constructor(options: BatchStoreOptions) {
		this.#options = options;
	}

	/** Validates the create parameters and stores a `validating` batch; returns it with its parsed lines. */
	create(params: unknown): BatchResult & { lines?: BatchLine[] } {
		if (!isRecord(params)) return fail(400, 'The request body must be a JSON object.');
		const { input_file_id: inputFileId, endpoint, completion_window: window, metadata } = params;
		if (typeof inputFileId !== 'string') return fail(400, "Missing required parameter: 'input_file_id'.", 'input_file_id');
		const file = this.#options.files.get(inputFileId);
		if (!file) return fail(400, `Invalid 'input_file_id': file ${inputFileId} not found.`, 'input_file_id');
		if (file.meta.purpose !== 'batch') return fail(400, `File ${inputFileId} has purpose ${file.meta.purpose}, expected batch.`, 'input_file_id');
		if (endpoint !== SUPPORTED_ENDPOINT) return fail(400, `Unsupported endpoint ${JSON.stringify(endpoint)}; this server batches ${SUPPORTED_ENDPOINT} only.`, 'endpoint');
		if (window !== '24h') return fail(400, `Invalid completion_window ${JSON.stringify(window)}; only '24h' is supported.`, 'completion_window');
		if (metadata !== undefined && metadata !== null) {
			const entries = isRecord(metadata) ? Object.entries(metadata) : null;
			if (!entries || entries.length > 16 || entries.some(([key, value]) => key.length > 64 || typeof value !== 'string' || value.length > 512)) {
				return fail(400, 'metadata must hold at most 16 string pairs, keys up to 64 and values up to 512 characters.', 'metadata');
			}
		}
		const { lines, errors } = parseBatchInput(this.#options.files.text(inputFileId) ?? '', endpoint);
		const createdAt = nowS();
		const meta: BatchObject = {
			id: newId('batch_'),
			object: 'batch',
			endpoint,
			errors: null,
			input_file_id: inputFileId,
			completion_window: window,
			status: 'validating',
			output_file_id: null,
			error_file_id: null,
			created_at: createdAt,
			in_progress_at: null,
			expires_at: createdAt + DAY_S,
			finalizing_at: null,
			completed_at: null,
			failed_at: null,
			expired_at: null,
			cancelling_at: null,
			cancelled_at: null,
			request_counts: { total: 0, completed: 0, failed: 0 },
			metadata: (metadata as Record<string, string> | null | undefined) ?? null,
			model: lines.find((line) => line.request)?.request?.model ?? null,
			usage: null,
		};
		const refusal = errors.length === 0 ? (this.#options.admit?.(meta, lines) ?? null) : null;
		const record: BatchRecord = { meta, lines, validationErrors: refusal ? [refusal] : errors, endState: this.#options.config().batchEndState, released: false, chain: Promise.resolve() };
		this.#batches.set(meta.id, record);
		this.#order.push(meta.id);
		return { ok: true, batch: meta, lines };
	}

	/** The batch after advancing it by `batchStepsPerPoll` status steps (fewer when held or finished). */
	async retrieve(id: string): Promise<BatchResult> {
		const record = this.#batches.get(id);
		if (!record) return fail(404, `No batch found with id '${id}'.`, 'batch_id');
		const steps = this.#options.config().batchStepsPerPoll;
		const run = record.chain.then(async () => {
			for (let i = 0; i < steps; i++) if (!(await this.#step(record))) break;
		});
		record.chain = run.catch(() => undefined);
		await run;
		return { ok: true, batch: record.meta };
	}

	/** Batches newest first, after the `after` id, at most `limit` of them. */
	list(after: string | null, limit: number): { data: BatchObject[]; has_more: boolean } {
		const newestFirst = [...this.#order].reverse();
		const start = after === null ? 0 : newestFirst.indexOf(after) + 1;
		if (after !== null && start === 0) return { data: [], has_more: false };
		const ids = newestFirst.slice(start, start + limit);
		return {
			data: ids.map((id) => this.#batches.get(id)?.meta).filter((meta): meta is BatchObject => meta !== undefined),
			has_more: start + limit < newestFirst.length,
		};
	}

	/** Moves a running batch to `cancelling`; the next retrieve ends it `cancelled` with partial results. */
	async cancel(id: string): Promise<BatchResult> {
		const record = this.#batches.get(id);
		if (!record) return fail(404, `No batch found with id '${id}'.`, 'batch_id');
		await record.chain;
		const { meta } = record;
		if (meta.status === 'cancelling') return { ok: true, batch: meta };
		if (!['validating', 'in_progress', 'finalizing'].includes(meta.status)) {
			return fail(400, `Cannot cancel a batch with status '${meta.status}'.`);
		}
		meta.status = 'cancelling';
		meta.cancelling_at = nowS();
		return { ok: true, batch: meta };
	}

	/** Lets every existing batch leave `in_progress`; returns how many were held there. */
	release(): number {
		let held = 0;
		for (const record of this.#batches.values()) {
			if (!record.released && record.meta.status === 'in_progress' && this.#options.config().holdBatches) held++;
			record.released = true;
		}
		return held;
	}

	clear(): void {
		this.#batches.clear();
		this.#order = [];
	}

	/** One status step; false when the batch cannot move now. */
	async #step(record: BatchRecord): Promise<boolean> {
		const { meta } = record;
		const now = nowS();
		switch (meta.status) {
			case 'validating': {
				if (record.validationErrors.length > 0 || record.endState === 'failed') {
					const data = record.validationErrors.length > 0
						? record.validationErrors
						: [{ code: 'invalid_request', line: null, message: 'The batch failed validation.', param: null }];
					meta.status = 'failed';
					meta.failed_at = now;
					meta.errors = { object: 'list', data };
					return true;
				}
				meta.status = 'in_progress';
				meta.in_progress_at = now;
				meta.request_counts = { total: record.lines.length, completed: 0, failed: 0 };
				return true;
			}
			case 'in_progress':
				if (this.#options.config().holdBatches && !record.released) return false;
				if (record.endState === 'expired') {
					await this.#finish(record, 'expired');
				} else if (record.endState === 'cancelled') {
					meta.status = 'cancelling';
					meta.cancelling_at = now;
				} else {
					meta.status = 'finalizing';
					meta.finalizing_at = now;
				}
				return true;
			case 'finalizing':
				await this.#finish(record, 'completed');
				return true;
			case 'cancelling':
				await this.#finish(record, 'cancelled');
				return true;
			default:
				return false;
		}
	}

	/**
	 * Answers the lines and writes the result files. A completed batch answers every line; an expired or cancelled
	 * one answers the first `batchPartialFraction` of them. Unanswered lines of an expired batch go to the error
	 * file as `batch_expired`; those of a cancelled batch appear in neither file.
	 */
	async #finish(record: BatchRecord, final: 'completed' | 'expired' | 'cancelled'): Promise<void> {
		const config = this.#options.config();
		const { meta, lines } = record;
		const answered = final === 'completed' ? lines.length : Math.floor(lines.length * config.batchPartialFraction);
		const output = new ChunkWriter();
		const errors = new ChunkWriter();
		let outputLines = 0;
		let errorLines = 0;
		let completed = 0;
		let failed = 0;
		let inputTokens = 0;
		let outputTokens = 0;
		for (let n = 0; n < lines.length; n++) {
			if (n > 0 && n % YIELD_EVERY === 0) await new Promise((resolve) => setImmediate(resolve));
			const index = config.batchOutputOrder === 'reversed' ? lines.length - 1 - n : n;
			const line = lines[index];
			if (!line) continue;
			if (index >= answered) {
				if (final === 'expired') {
					errors.writeLine(
						JSON.stringify({
							id: newId('batch_req_'),
							custom_id: line.customId,
							response: null,
							error: { code: 'batch_expired', message: 'This request could not be executed before the completion window expired.' },
						}),
					);
					errorLines++;
					failed++;
				}
				continue;
			}
			const outcome: ChatOutcome = line.request
				? this.#options.answer(line.request, line.customId)
				: { ok: false, status: 400, error: line.requestError ?? apiError('Invalid request.') };
			if (outcome.ok) {
				const { usage } = outcome.body;
				inputTokens += usage.prompt_tokens;
				outputTokens += usage.completion_tokens;
				output.writeLine(
					JSON.stringify({
						id: newId('batch_req_'),
						custom_id: line.customId,
						response: { status_code: 200, request_id: newId('req_'), body: outcome.body },
						error: null,
					}),
				);
				outputLines++;
				completed++;
				continue;
			}
			failed++;
			const httpLine = {
				id: newId('batch_req_'),
				custom_id: line.customId,
				response: { status_code: outcome.status, request_id: newId('req_'), body: { error: outcome.error } },
				error: null,
			};
			if (config.batchErrorStyle === 'output-non-200') {
				output.writeLine(JSON.stringify(httpLine));
				outputLines++;
			} else if (config.batchErrorStyle === 'error-file-http') {
				errors.writeLine(JSON.stringify(httpLine));
				errorLines++;
			} else {
				errors.writeLine(
					JSON.stringify({
						id: httpLine.id,
						custom_id: line.customId,
						response: null,
						error: { code: outcome.error.code ?? outcome.error.type, message: outcome.error.message },
					}),
				);
				errorLines++;
			}
		}
		const now = nowS();
		if (outputLines > 0) {
			meta.output_file_id = this.#options.files.add({ filename: `${meta.id}_output.jsonl`, purpose: 'batch_output', chunks: output.finish().chunks }).id;
		}
		if (errorLines > 0) {
			meta.error_file_id = this.#options.files.add({ filename: `${meta.id}_error.jsonl`, purpose: 'batch_output', chunks: errors.finish().chunks }).id;
		}
		meta.request_counts = { total: lines.length, completed, failed };
		meta.usage = {
			input_tokens: inputTokens,
			input_tokens_details: { cached_tokens: 0 },
			output_tokens: outputTokens,
			output_tokens_details: { reasoning_tokens: 0 },
			total_tokens: inputTokens + outputTokens,
		};
		// The answers are in the files now; the parsed requests are no longer needed.
		record.lines = [];
		meta.status = final;
		if (final === 'completed') meta.completed_at = now;
		else if (final === 'expired') meta.expired_at = now;
		else meta.cancelled_at = now;
	}
}
