/** The request log's entry type and the counting helpers tests use for exactly-once checks. */
import { BATCH_GENERATE_CONTENT_PATH, GENERATE_CONTENT_PATH } from './google-generate.ts';

/** One request to the `/v1` API (or the Gemini API's `/v1beta`), in arrival order. */
export interface RequestLogEntry {
	/** 1-based arrival number. */
	seq: number;
	method: string;
	/** Path without the query string, such as `/v1/chat/completions`. */
	path: string;
	/** Arrival time, ms since the epoch. */
	time: number;
	/**
	 * The key the request carried (OpenAI's `Authorization: Bearer <key>`, Anthropic's `x-api-key`, or Google's
	 * `x-goog-api-key`), and any `x-*` headers besides the SDKs' own.
	 */
	apiKey?: string | null;
	extraHeaders?: Record<string, string>;
	/** Status sent, or null while the answer is pending (or never came, as with `hangChat`). */
	status: number | null;
	/** Chat completions, Anthropic messages and Gemini generateContent: the `task` and `route` of the prompt context, and the json_schema name (OpenAI only). */
	task?: string | null;
	route?: string | null;
	schemaName?: string | null;
	/** Batch creation: the custom_ids and the prompt-context routes of the input lines, in file order. */
	customIds?: string[];
	routes?: (string | null)[];
	/** Batch creation: each input line's page `facts` from its prompt context (null without), in file order. */
	lineFacts?: (Record<string, unknown> | null)[];
	/** Batch routes: the batch id (set on create once known). Batch metadata on create. */
	batchId?: string;
	metadata?: Record<string, string> | null;
	/** File routes: the file id. */
	fileId?: string;
	/** Chat completions: the `editor_instructions` of the prompt context, when it has them. */
	instructions?: string;
	/** Chat completions: the `quality_issues` of the prompt context, when it has them (a second draft). */
	qualityIssues?: string[];
	/** Chat completions: the page's `facts` in the prompt context, when it has them. */
	facts?: Record<string, unknown>;
	/** Chat completions answered 200: the usage the answer reported. */
	usage?: { prompt_tokens: number; completion_tokens: number };
}

/** The model calls of every protocol: OpenAI chat completions, Anthropic messages, and Gemini's generateContent. */
const CHAT_PATHS = new Set(['/v1/chat/completions', '/v1/messages']);

function isChatPath(path: string): boolean {
	return CHAT_PATHS.has(path) || GENERATE_CONTENT_PATH.test(path);
}
/** Batch creates of every protocol: OpenAI's, Anthropic's, and Gemini's `batchGenerateContent`. */
const BATCHES_PATHS = new Set(['/v1/batches', '/v1/messages/batches']);

function isBatchCreate(entry: RequestLogEntry): boolean {
	return entry.method === 'POST' && entry.status === 200 && (BATCHES_PATHS.has(entry.path) || BATCH_GENERATE_CONTENT_PATH.test(entry.path));
}

/** Model calls received (every attempt, whatever its answer), optionally only for one route. */
export function countChat(entries: readonly RequestLogEntry[], route?: string): number {
	return entries.filter((entry) => entry.method === 'POST' && isChatPath(entry.path) && (route === undefined || entry.route === route)).length;
}

/** Batches created successfully (`POST /v1/batches`, `/v1/messages/batches` or `:batchGenerateContent` answered 200). */
export function countBatchesCreated(entries: readonly RequestLogEntry[]): number {
	return entries.filter(isBatchCreate).length;
}

/** How many times a route was submitted in successfully created batches. */
export function countBatchedRoute(entries: readonly RequestLogEntry[], route: string): number {
	return entries
		.filter(isBatchCreate)
		.reduce((sum, entry) => sum + (entry.routes ?? []).filter((item) => item === route).length, 0);
}
