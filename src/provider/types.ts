/** One chat message as the provider takes it. */
export interface ChatMessage {
	role: 'system' | 'user' | 'assistant';
	content: string;
}

/** A request for one JSON object that must satisfy a strict json_schema. */
export interface JsonCompletionRequest {
	/** json_schema name, `[a-zA-Z0-9_-]{1,64}`. */
	schemaName: string;
	/** A strict-mode JSON schema (every property required, additionalProperties false). */
	schema: Record<string, unknown>;
	messages: ChatMessage[];
	/**
	 * Checks the parsed object beyond the schema (lengths, allowed routes...). Returns an error message when the
	 * output is unusable; the provider then retries like any other transient fault.
	 */
	validate?: (value: unknown) => string | null;
	signal?: AbortSignal;
	/** Structured fields for log lines about this call, such as `{ jobId, route }`. */
	logContext?: Record<string, unknown>;
	/**
	 * Called with the tokens the provider reports for every answer it gave, retried and invalid ones included:
	 * each of them was billed.
	 */
	onUsage?: (usage: ReportedUsage) => void;
}

/** Tokens the provider reports for one answer (`usage` of a chat completion). */
export interface ReportedUsage {
	prompt_tokens: number;
	completion_tokens: number;
}

/** The provider's answer's `usage`, when it reports one with sensible numbers. */
export function readUsage(usage: unknown): ReportedUsage | null {
	if (typeof usage !== 'object' || usage === null) return null;
	const { prompt_tokens: prompt, completion_tokens: completion } = usage as Record<string, unknown>;
	const count = (value: unknown) => (typeof value === 'number' && Number.isSafeInteger(value) && value >= 0 ? value : 0);
	return { prompt_tokens: count(prompt), completion_tokens: count(completion) };
}

/**
 * One line of a batch's results, read by the provider that ran it: the parsed JSON object of an answer, or a short
 * human `error`, with the tokens the provider reports for it (null when it reports none). `unanswered` marks a
 * request the provider never ran (its batch expired or was cancelled first), which is resubmitted or failed but
 * never retried through chat. `customId` is null when the line names no request.
 */
export type BatchLineResult = ({ customId: string; ok: true; content: unknown } | { customId: string | null; ok: false; error: string; code?: string | null; unanswered?: boolean }) & {
	usage?: ReportedUsage | null;
};

/** A chat-completions provider that returns validated JSON objects. */
export interface JsonProvider {
	completeJson<T = unknown>(request: JsonCompletionRequest): Promise<T>;
}

/** Batch statuses of the OpenAI Batch API; other servers' values are passed through as they come. */
export type BatchStatus =
	| 'validating'
	| 'failed'
	| 'in_progress'
	| 'finalizing'
	| 'completed'
	| 'expired'
	| 'cancelling'
	| 'cancelled';

/** One input-validation error of a failed batch. */
interface BatchError {
	code: string | null;
	message: string;
	line: number | null;
}

/** A provider batch, reduced to what the job engine needs. */
export interface BatchInfo {
	id: string;
	status: BatchStatus;
	/** The JSONL the batch runs, when the provider says. */
	inputFileId: string | null;
	outputFileId: string | null;
	errorFileId: string | null;
	requestCounts: { total: number; completed: number; failed: number };
	metadata: Record<string, string>;
	/** Why a `failed` batch was rejected (input validation errors, at most 10, messages short and redacted); else empty. */
	errors: BatchError[];
	/** Unix seconds, when the provider says. */
	createdAt: number | null;
}

/** A file the provider holds. */
export interface ProviderFile {
	id: string;
	filename: string;
	/** Unix seconds. */
	createdAt: number;
}

/** Batch API operations (`/v1/files` + `/v1/batches`) of an OpenAI-compatible provider, or their equivalent. */
export interface BatchProvider {
	/**
	 * The custom id of the job's route at `position` (0-based), for a provider whose ids cannot hold a route (Anthropic
	 * takes `[a-zA-Z0-9_-]{1,64}`). Without it, a line's custom id is its route.
	 */
	customIdFor?(route: string, position: number): string;
	/**
	 * True for a provider whose ended batches hold their results until they are deleted (Anthropic, Google): a twin
	 * of a part, which a lost create left running, is looked for again once the part is ingested and deleted once it
	 * has ended, rather than left to an expiry. (Anthropic's lookups find a running twin not at all, Google's find it
	 * and cancel it first.)
	 */
	twinsDeletedOnceEnded?: boolean;
	/** What one batch may hold at most, when the provider is stricter than the instance's PSEO_BATCH_MAX_*. */
	limits?: { maxRequests: number; maxBytes: number };
	/** One JSONL line for `/v1/chat/completions` with the same body as a direct {@link JsonProvider.completeJson} call. */
	buildBatchLine(customId: string, request: JsonCompletionRequest): string;
	/** Uploads JSONL lines with `purpose: 'batch'`; resolves to the file id. Not retried except on 429. */
	uploadBatchFile(lines: string[] | AsyncIterable<string>, filename: string): Promise<string>;
	/** Creates a 24h chat-completions batch tagged with `metadata`. Never repeated, not even after a 429 (the engine waits). */
	createBatch(inputFileId: string, metadata: Record<string, string>): Promise<BatchInfo>;
	/** The newest batch whose `metadata[key] === value`, looking at a bounded number of recent batches. */
	findBatchByMetadata(key: string, value: string): Promise<BatchInfo | null>;
	/** Every batch whose `metadata[key] === value` among the same recent batches, newest first. */
	findBatchesByMetadata(key: string, value: string): Promise<BatchInfo[]>;
	retrieveBatch(id: string): Promise<BatchInfo>;
	/** Asks the provider to stop a batch (it moves to `cancelling`, then `cancelled`); resolves to its new state. */
	cancelBatch(id: string): Promise<BatchInfo>;
	/** Deletes a file; resolves as well when the provider no longer has it. Not retried except on 429. */
	deleteFile(fileId: string): Promise<void>;
	/** The files of `purpose: 'batch'` the provider holds for this key, a page at a time, oldest first. */
	listBatchFiles(): AsyncIterable<ProviderFile>;
	/** The non-empty lines of a file, streamed: memory stays bounded by the longest line. */
	streamFileLines(fileId: string): AsyncIterable<string>;
	/** Reads one line of a batch's output or error file. */
	parseBatchLine(line: string): BatchLineResult;
}

/** Whether a server answers the Batch API: `unknown` when it gave no answer that decides (down, a refused key). */
export type BatchApiProbe = 'available' | 'missing' | 'unknown';

/** An OpenAI-compatible provider with chat completions and the Batch API. */
export interface OpenAiProvider extends JsonProvider, BatchProvider {
	/** Asks the server for its batches (`GET /batches?limit=1`), once: a server without the route says `missing`. */
	probeBatchApi(): Promise<BatchApiProbe>;
}
