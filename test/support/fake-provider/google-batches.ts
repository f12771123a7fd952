/**
 * The Gemini API's Batch API (`POST /v1beta/models/{model}:batchGenerateContent`): a batch is a long-running
 * Operation whose metadata goes `BATCH_STATE_PENDING`, `BATCH_STATE_RUNNING`, then an end state. Its requests come
 * inline (`inputConfig.requests.requests`, each with its metadata), and its ended metadata then carries the answers
 * inline (`output.inlinedResponses.inlinedResponses`), one per answered request with the request's metadata; or they
 * come as an uploaded file (`inputConfig.fileName`, google-files.ts) of `{ "key", "request" }` lines, and the
 * answers go to a results file the batch names (`output.responsesFile`, and the done Operation's `response`), one
 * line per answered request, `{ "key", "response" }` or `{ "key", "error" }`. The input file is read at the create
 * (a line that is not such an object refuses it); deleting it afterwards does not touch the batch, nor does deleting
 * the batch its results file.
 *
 * The batch knobs of the OpenAI side apply with their closest meaning:
 * - `holdBatches`: a batch may become RUNNING but does not leave RUNNING until `release()` (a pending cancel still
 *   ends it);
 * - `batchStepsPerPoll`: the state steps each `GET /v1beta/batches/{id}` takes;
 * - `batchEndState`, read when the batch is created: `completed` ends `BATCH_STATE_SUCCEEDED` with every request
 *   answered; `expired` ends `BATCH_STATE_EXPIRED` and `cancelled` `BATCH_STATE_CANCELLED`, each answering only the
 *   first `batchPartialFraction` of the requests (the rest are absent from the output); `failed` ends
 *   `BATCH_STATE_FAILED` with the Operation's `error` set and no output at all;
 * - `batchOutputOrder`: the order of the answers, inline or in the results file (`reversed` or `input`).
 *
 * A request that is not a valid `generateContent` request does not fail the create: it ends as an answer with an
 * `error`, as do the requests the answering core fails (the chat faults: `failRoutes`, which may also name a
 * request's key, `chatErrorsForTask`, `planFail`).
 */
import { randomBytes } from 'node:crypto';
import { apiError } from './chat.ts';
import type { ApiError, ChatRequest } from './chat.ts';
import type { BatchEndState, FakeConfig } from './config.ts';
import { ChunkWriter } from './files.ts';
import type { GoogleFileStore } from './google-files.ts';
import { googleErrorBody, parseGenerateContentRequest } from './google-generate.ts';
import type { GenerateContentResponse } from './google-generate.ts';

type BatchState =
	| 'BATCH_STATE_PENDING'
	| 'BATCH_STATE_RUNNING'
	| 'BATCH_STATE_SUCCEEDED'
	| 'BATCH_STATE_FAILED'
	| 'BATCH_STATE_CANCELLED'
	| 'BATCH_STATE_EXPIRED';

/** An error as a google.rpc.Status: the gRPC code, Google's message, and the canonical code's name. */
interface RpcStatus {
	code: number;
	message: string;
	status: string;
}

/** One answered request of an ended batch. */
type InlinedResponse =
	| { response: GenerateContentResponse; metadata?: Record<string, unknown> }
	| { error: RpcStatus; metadata?: Record<string, unknown> };

/** Counts are int64, which Google's JSON writes as strings. */
interface BatchStats {
	requestCount: string;
	successfulRequestCount?: string;
	failedRequestCount?: string;
	pendingRequestCount: string;
}

/** The wire shape of a batch: the Operation that `batchGenerateContent`, `GET /v1beta/batches/{id}` and the list answer. */
export interface GoogleBatchOperation {
	name: string;
	metadata: {
		'@type': 'type.googleapis.com/google.ai.generativelanguage.v1beta.GenerateContentBatch';
		name: string;
		model: string;
		displayName?: string;
		createTime: string;
		updateTime: string;
		endTime?: string;
		batchStats: BatchStats;
		state: BatchState;
		/** Echoed for a batch of an uploaded file. */
		inputConfig?: { fileName: string };
		output?: { inlinedResponses: { inlinedResponses: InlinedResponse[] } } | { responsesFile: string };
	};
	done?: true;
	error?: { code: number; message: string };
	/** A done batch's output, where a long-running Operation puts its result (set for a batch of an uploaded file). */
	response?: { '@type': typeof OUTPUT_TYPE; responsesFile: string };
}

/** One request of a batch: its metadata (and key), and either a valid request or the error it will end with. */
export interface GoogleBatchLine {
	/** `metadata.key`, or '' when the request has none. */
	key: string;
	metadata: Record<string, unknown> | null;
	request: ChatRequest | null;
	requestError: ApiError | null;
}

interface GoogleBatchRecord {
	operation: GoogleBatchOperation;
	lines: GoogleBatchLine[];
	/** Whether the requests came as an uploaded file: the answers then go to a results file. */
	fromFile: boolean;
	endState: BatchEndState;
	released: boolean;
	cancelPending: boolean;
	// Serialises state steps, so two concurrent gets never answer the requests twice.
	chain: Promise<unknown>;
}

type Failure = { ok: false; status: number; error: ApiError };
type OperationResult = { ok: true; operation: GoogleBatchOperation } | Failure;

/** The real API's limit on an inline batch's request body. */
export const MAX_INLINE_BATCH_BYTES = 20 * 1024 * 1024;
export const INLINE_BATCH_TOO_LARGE = `Request payload size exceeds the limit: ${MAX_INLINE_BATCH_BYTES} bytes.`;
const OPERATION_TYPE = 'type.googleapis.com/google.ai.generativelanguage.v1beta.GenerateContentBatch';
const OUTPUT_TYPE = 'type.googleapis.com/google.ai.generativelanguage.v1beta.GenerateContentBatchOutput';
/** The type a results file is written with. */
const RESULTS_TYPE = 'application/jsonl';
const YIELD_EVERY = 250;
/** gRPC codes by HTTP status, as a google.rpc.Status carries them. */
const RPC_CODES: Record<string, number> = {
	INVALID_ARGUMENT: 3,
	DEADLINE_EXCEEDED: 4,
	NOT_FOUND: 5,
	PERMISSION_DENIED: 7,
	RESOURCE_EXHAUSTED: 8,
	INTERNAL: 13,
	UNAVAILABLE: 14,
	UNAUTHENTICATED: 16,
};

function fail(status: number, message: string): Failure {
	return { ok: false, status, error: apiError(message) };
}

function isRecord(value: unknown): value is Record<string, unknown> {
	return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function rfc3339(ms: number): string {
	return new Date(ms).toISOString();
}

/** A batch id as the real API's: lowercase letters and digits. */
function batchId(): string {
	return randomBytes(12).toString('hex');
}

/** An error of the answering core as the google.rpc.Status an inline response carries. */
function rpcStatus(status: number, message: string): RpcStatus {
	const { error } = googleErrorBody(status, message);
	return { code: RPC_CODES[error.status] ?? 2, message: error.message, status: error.status };
}

function isEnded(state: BatchState): boolean {
	return state !== 'BATCH_STATE_PENDING' && state !== 'BATCH_STATE_RUNNING';
}

/** A page token: the offset and the id of the last batch given, so that deleting a batch meanwhile skips nothing. */
function encodePageToken(offset: number, lastId: string): string {
	return Buffer.from(JSON.stringify([offset, lastId])).toString('base64url');
}

function decodePageToken(token: string): { offset: number; lastId: string } | null {
	try {
		const value = JSON.parse(Buffer.from(token, 'base64url').toString('utf8')) as unknown;
		if (Array.isArray(value) && Number.isInteger(value[0]) && (value[0] as number) >= 0 && typeof value[1] === 'string') {
			return { offset: value[0] as number, lastId: value[1] };
		}
	} catch {
		// Falls through to null.
	}
	return null;
}

export interface GoogleBatchStoreOptions {
	config: () => FakeConfig;
	/** The Files API: the input files batches read, and where their results files go. */
	files: GoogleFileStore;
	/** Answers one request through the same path as `generateContent`; `key` is the request's `metadata.key`. */
	answer: (request: ChatRequest, key: string) => { ok: true; response: GenerateContentResponse } | { ok: false; status: number; error: ApiError };
	/** Called with a valid batch about to be stored; it throws the answer to send instead (nothing is stored then). */
	admit?: (operation: GoogleBatchOperation, lines: GoogleBatchLine[]) => void;
}

export class GoogleBatchStore {
	#batches = new Map<string, GoogleBatchRecord>();
	#order: string[] = [];
	#options: GoogleBatchStoreOptions;

	constructor(options: GoogleBatchStoreOptions) {
		this.#options = options;
	}

	/**
	 * Validates the envelope (the batch, its inline requests, their metadata) and stores a PENDING batch. A request
	 * that is not a valid `generateContent` request does not fail the create: it ends as an error response.
	 */
	create(model: string, body: unknown): OperationResult & { lines?: GoogleBatchLine[] } {
		if (!isRecord(body)) return fail(400, 'Invalid JSON payload received. The request body must be a JSON object.');
		const { batch } = body;
		if (!isRecord(batch)) return fail(400, '* BatchGenerateContentRequest.batch: batch is required');
		const { displayName, inputConfig } = batch;
		if (displayName !== undefined && typeof displayName !== 'string') return fail(400, '* GenerateContentBatch.display_name: must be a string');
		if (!isRecord(inputConfig)) return fail(400, '* GenerateContentBatch.input_config: input_config is required');
		const { fileName } = inputConfig;
		if (fileName !== undefined && typeof fileName !== 'string') return fail(400, '* GenerateContentBatch.input_config.file_name: must be a string');
		const read = fileName === undefined ? inlineLines(model, inputConfig.requests) : this.#fileLines(model, fileName);
		if (!read.ok) return read;
		const { lines } = read;
		const id = batchId();
		const now = rfc3339(Date.now());
		const operation: GoogleBatchOperation = {
			name: `batches/${id}`,
			metadata: {
				'@type': OPERATION_TYPE,
				name: `batches/${id}`,
				model: `models/${model}`,
				...(displayName === undefined ? {} : { displayName }),
				createTime: now,
				updateTime: now,
				batchStats: { requestCount: String(lines.length), pendingRequestCount: String(lines.length) },
				state: 'BATCH_STATE_PENDING',
				...(fileName === undefined ? {} : { inputConfig: { fileName } }),
			},
		};
		this.#options.admit?.(operation, lines);
		const record: GoogleBatchRecord = {
			operation,
			lines,
			fromFile: fileName !== undefined,
			endState: this.#options.config().batchEndState,
			released: false,
			cancelPending: false,
			chain: Promise.resolve(),
		};
		this.#batches.set(id, record);
		this.#order.push(id);
		return { ok: true, operation, lines };
	}

	/** The requests of an uploaded input file: one `{ "key", "request" }` object a line, the key a string. */
	#fileLines(model: string, fileName: string): { ok: true; lines: GoogleBatchLine[] } | Failure {
		const text = /^files\/[^/]+$/.test(fileName) ? this.#options.files.text(fileName.slice('files/'.length)) : null;
		if (text === null) return fail(400, `* GenerateContentBatch.input_config.file_name: ${fileName} does not exist.`);
		const lines: GoogleBatchLine[] = [];
		for (const [index, raw] of text.split('\n').entries()) {
			if (raw.trim() === '') continue;
			let item: unknown;
			try {
				item = JSON.parse(raw);
			} catch {
				return fail(400, `${fileName}, line ${index + 1}: not valid JSON.`);
			}
			if (!isRecord(item) || typeof item.key !== 'string' || !isRecord(item.request)) {
				return fail(400, `${fileName}, line ${index + 1}: expected an object with a string "key" and a "request" object.`);
			}
			const parsed = parseGenerateContentRequest(model, item.request);
			lines.push({ key: item.key, metadata: null, request: parsed.ok ? parsed.request : null, requestError: parsed.ok ? null : parsed.error });
		}
		if (lines.length === 0) return fail(400, `${fileName}: the input file holds no request.`);
		return { ok: true, lines };
	}

	/** The batch after advancing it by `batchStepsPerPoll` steps (fewer when held or ended). */
	async get(id: string): Promise<OperationResult> {
		const record = this.#batches.get(id);
		if (!record) return notFound();
		const steps = this.#options.config().batchStepsPerPoll;
		const run = record.chain.then(async () => {
			for (let i = 0; i < steps; i++) if (!(await this.#step(record))) break;
		});
		record.chain = run.catch(() => undefined);
		await run;
		return { ok: true, operation: record.operation };
	}

	/** A page of batches, newest first, as they stand (nothing advances); `pageToken` comes from the previous page. */
	list(pageSize: number, pageToken: string | null): { ok: true; operations: GoogleBatchOperation[]; nextPageToken?: string } | Failure {
		const newestFirst = [...this.#order].reverse();
		let start = 0;
		if (pageToken !== null && pageToken !== '') {
			const token = decodePageToken(pageToken);
			if (token === null) return fail(400, 'Invalid page token.');
			const after = newestFirst.indexOf(token.lastId);
			start = after === -1 ? Math.min(token.offset, newestFirst.length) : after + 1;
		}
		const ids = newestFirst.slice(start, start + pageSize);
		const operations = ids.map((id) => this.#batches.get(id)?.operation).filter((operation): operation is GoogleBatchOperation => operation !== undefined);
		const end = start + ids.length;
		const lastId = ids.at(-1);
		return end < newestFirst.length && lastId !== undefined
			? { ok: true, operations, nextPageToken: encodePageToken(end, lastId) }
			: { ok: true, operations };
	}

	/** Marks a PENDING or RUNNING batch for cancelling; its next step ends it `BATCH_STATE_CANCELLED`. */
	async cancel(id: string): Promise<{ ok: true } | Failure> {
		const record = this.#batches.get(id);
		if (!record) return notFound();
		await record.chain;
		if (isEnded(record.operation.metadata.state)) return fail(400, 'Batch is already in a terminal state.');
		record.cancelPending = true;
		record.operation.metadata.updateTime = rfc3339(Date.now());
		return { ok: true };
	}

	/** Forgets an ended batch and its answers; a running one must be cancelled first. */
	async delete(id: string): Promise<{ ok: true } | Failure> {
		const record = this.#batches.get(id);
		if (!record) return notFound();
		await record.chain;
		if (!isEnded(record.operation.metadata.state)) return fail(400, 'Cannot delete a batch that is still running; cancel it first.');
		this.#batches.delete(id);
		this.#order = this.#order.filter((other) => other !== id);
		return { ok: true };
	}

	/** Lets every existing batch leave RUNNING; returns how many were held. */
	release(): number {
		let held = 0;
		for (const record of this.#batches.values()) {
			if (!record.released && !isEnded(record.operation.metadata.state) && this.#options.config().holdBatches) held++;
			record.released = true;
		}
		return held;
	}

	clear(): void {
		this.#batches.clear();
		this.#order = [];
	}

	/** One state step; false when the batch cannot move now. */
	async #step(record: GoogleBatchRecord): Promise<boolean> {
		const { metadata } = record.operation;
		switch (metadata.state) {
			case 'BATCH_STATE_PENDING':
				if (record.cancelPending) {
					await this.#finish(record, 'cancelled');
				} else {
					metadata.state = 'BATCH_STATE_RUNNING';
					metadata.updateTime = rfc3339(Date.now());
				}
				return true;
			case 'BATCH_STATE_RUNNING':
				if (record.cancelPending) {
					await this.#finish(record, 'cancelled');
					return true;
				}
				if (this.#options.config().holdBatches && !record.released) return false;
				await this.#finish(record, record.endState);
				return true;
			default:
				return false;
		}
	}

	/**
	 * Ends the batch: answers the requests that its end state answers (all of them when completed, the first
	 * `batchPartialFraction` when expired or cancelled, none when failed) and puts them inline in the metadata.
	 */
	async #finish(record: GoogleBatchRecord, final: BatchEndState): Promise<void> {
		const config = this.#options.config();
		const { operation, lines } = record;
		const { metadata } = operation;
		const partial = final === 'expired' || final === 'cancelled';
		const answered = final === 'failed' ? 0 : partial ? Math.floor(lines.length * config.batchPartialFraction) : lines.length;
		const responses: InlinedResponse[] = [];
		// A batch of an uploaded file writes its answers as lines named by their key, ~1 MB a buffer.
		const results = record.fromFile ? new ChunkWriter() : null;
		let succeeded = 0;
		let failed = 0;
		for (let n = 0; n < lines.length; n++) {
			if (n > 0 && n % YIELD_EVERY === 0) await new Promise((resolve) => setImmediate(resolve));
			const index = config.batchOutputOrder === 'reversed' ? lines.length - 1 - n : n;
			const line = lines[index];
			if (!line || index >= answered) continue;
			const outcome = line.request
				? this.#options.answer(line.request, line.key)
				: { ok: false as const, status: 400, error: line.requestError ?? apiError('Invalid request.') };
			const answer: InlinedResponse = outcome.ok ? { response: outcome.response } : { error: rpcStatus(outcome.status, outcome.error.message) };
			if (results) results.writeLine(JSON.stringify({ key: line.key, ...answer }));
			else responses.push(line.metadata === null ? answer : { ...answer, metadata: line.metadata });
			if (outcome.ok) succeeded++;
			else failed++;
		}
		// The answers are in the Operation or its results file now; the parsed requests are no longer needed.
		record.lines = [];
		const now = rfc3339(Date.now());
		metadata.state = { completed: 'BATCH_STATE_SUCCEEDED', expired: 'BATCH_STATE_EXPIRED', cancelled: 'BATCH_STATE_CANCELLED', failed: 'BATCH_STATE_FAILED' }[final] as BatchState;
		metadata.updateTime = now;
		metadata.endTime = now;
		metadata.batchStats = {
			requestCount: String(lines.length),
			successfulRequestCount: String(succeeded),
			failedRequestCount: String(failed),
			pendingRequestCount: String(lines.length - succeeded - failed),
		};
		if (results && succeeded + failed > 0) {
			const responsesFile = this.#options.files.addGenerated(results.finish().chunks, RESULTS_TYPE).name;
			metadata.output = { responsesFile };
			operation.response = { '@type': OUTPUT_TYPE, responsesFile };
		} else if (responses.length > 0) {
			metadata.output = { inlinedResponses: { inlinedResponses: responses } };
		}
		operation.done = true;
		if (final === 'failed') operation.error = { code: 13, message: 'Internal error encountered.' };
	}
}

/** The requests given inline, each with its metadata (its `key` names it). */
function inlineLines(model: string, given: unknown): { ok: true; lines: GoogleBatchLine[] } | Failure {
	const requests = isRecord(given) ? given.requests : undefined;
	if (!Array.isArray(requests) || requests.length === 0) {
		return fail(400, '* GenerateContentBatch.input_config.requests.requests: at least one request is required');
	}
	const lines: GoogleBatchLine[] = [];
	for (const [index, item] of requests.entries()) {
		if (!isRecord(item)) return fail(400, `* GenerateContentBatch.input_config.requests.requests[${index}]: must be an object`);
		const { metadata } = item;
		if (metadata !== undefined && !isRecord(metadata)) {
			return fail(400, `* GenerateContentBatch.input_config.requests.requests[${index}].metadata: must be an object`);
		}
		const parsed = parseGenerateContentRequest(model, item.request);
		lines.push({
			key: typeof metadata?.key === 'string' ? metadata.key : '',
			metadata: metadata ?? null,
			request: parsed.ok ? parsed.request : null,
			requestError: parsed.ok ? null : parsed.error,
		});
	}
	return { ok: true, lines };
}

function notFound(): Failure {
	return fail(404, 'Requested entity was not found.');
}
