/** The fake provider's knobs: their types, defaults, and the validation of a partial update. */
import type { Responder } from './responders.ts';

/** How a route listed in `failRoutes` fails. */
export type RouteFailure = 'error' | 'malformed' | 'refusal' | 'invalid';

/** The state a batch ends in once it is allowed to finish. */
export type BatchEndState = 'completed' | 'expired' | 'cancelled' | 'failed';

/**
 * Where a failed batch line goes:
 * - `error-file`: a line in the error file with `response: null` and `error: {code, message}`;
 * - `error-file-http`: a line in the error file with `response.status_code` 500 and `body.error`, `error: null`;
 * - `output-non-200`: a line in the output file with `response.status_code` 500 and `body.error`.
 */
type BatchErrorStyle = 'error-file' | 'error-file-http' | 'output-non-200';

/** A status for every chat call of a task, or for the next `count` of them. */
type TaskError = number | { status: number; count: number };

export interface FakeConfig {
	/** Delay before every chat-completion answer, in ms. Default 0. */
	latencyMs: number;
	/** The next `count` chat calls answer 429 with `retry-after: retryAfterS`. Default null. */
	rateLimit: { count: number; retryAfterS: number } | null;
	/** The next `count` chat calls answer `status` (5xx). Default null. */
	serverErrors: { count: number; status: number } | null;
	/** Routes (or batch custom_ids) that fail, in chat and in batches, and how. Default {}. */
	failRoutes: Record<string, RouteFailure>;
	/** When set, a failing route fails only its first N attempts, then succeeds. Default null (always fails). */
	failRoutesTimes: number | null;
	/** Batches stay `in_progress` until `releaseBatches()`. Default false. */
	holdBatches: boolean;
	/** State new batches end in; read when the batch is created. Default 'completed'. */
	batchEndState: BatchEndState;
	/** Status steps a batch advances per retrieve. Default 1. */
	batchStepsPerPoll: number;
	/** Share of lines answered before an `expired` or `cancelled` end (partial results). Default 0.5. */
	batchPartialFraction: number;
	/** Where failed batch lines go. Default 'error-file'. */
	batchErrorStyle: BatchErrorStyle;
	/** Order of output lines; the real service does not keep input order. Default 'reversed'. */
	batchOutputOrder: 'input' | 'reversed';
	/** Chat calls never answer (until the client gives up or the server closes). Default false. */
	hangChat: boolean;
	/** Chat calls wait, logged and counted, until `releaseChat()` (or the client gives up). Default false. */
	holdChat: boolean;
	/**
	 * A file download sends its first N lines, then waits, its connection open, until `releaseFiles()` (or the client
	 * gives up): a reader caught in the middle of a batch's results. Default null (no hold).
	 */
	holdFileAfterLines: number | null;
	/**
	 * Batch creates wait, their request read and logged, until `releaseBatchCreates()` (or the client gives up): a
	 * create in flight while something else happens to its job. Default false.
	 */
	holdBatchCreates: boolean;
	/**
	 * `DELETE /v1/files/:id` (and Gemini's `DELETE /v1beta/files/{id}`) answers 403, as for an API key allowed to read
	 * files but not to delete them. Default false.
	 */
	refuseFileDeletes: boolean;
	/**
	 * `/v1/files` and `/v1/batches` answer 404, as an OpenAI-compatible server without the Batch API (Ollama, vLLM)
	 * does. Default false.
	 */
	noBatchApi: boolean;
	/** Uploads are stamped this many seconds in the past (`created_at`, Gemini's `createTime`), as files uploaded a while ago. Default 0. */
	uploadAgeS: number;
	/**
	 * `POST /v1/batches` answers this status and creates nothing: a 400 as for a model the Batch API does not serve, a
	 * 401 as for a revoked key, a 403 as for a project without the Batch API, a 5xx as an outage. Default null.
	 */
	refuseBatchCreates: number | null;
	/** Calls whose prompt context has this `task` answer this status (in chat, and as batch lines). Default {}. */
	chatErrorsForTask: Record<string, TaskError>;
	/** Plan calls (`plan_clusters`, `plan_pages`) answer 500 (in chat, and as batch lines). Default false. */
	planFail: boolean;
	/** Share of plan pages that repeat an earlier route. Default 0. */
	planDuplicateRate: number;
	/** Routes put into every plan_pages answer, such as routes the site already has. Default []. */
	planIncludeRoutes: string[];
	/** Share of plan pages with an invalid route (upper case, or no leading slash). Default 0. */
	planInvalidRate: number;
	/**
	 * Routes whose pages come out poor: `thin` (a few dozen words), `duplicate` (one shared body, so that every
	 * such page is a near-duplicate of the others) or `figure` (a price no fact gives: {@link INVENTED_FIGURE}). A request whose prompt names `quality_issues` gets a good page,
	 * unless `lowQualityPersists`. Default {}.
	 */
	lowQualityRoutes: Record<string, LowQuality>;
	/** Poor pages stay poor even when the prompt names their quality issues. Default false. */
	lowQualityPersists: boolean;
	/** Replacement responders by task, in-process only. Default {}. */
	responders: Record<string, Responder>;
	/**
	 * The account's enqueued-token limit for batches, in input tokens (`estimateInputTokens` of limits.ts, per
	 * request), over the batches of every protocol not yet ended. A batch that would take the count above it is, as
	 * each vendor does: OpenAI, created (200, `validating`), then `failed` at its next step with `errors.data[0].code`
	 * `token_limit_exceeded`; Anthropic and Gemini, refused with 429 (`rate_limit_error` with `retry-after`;
	 * `RESOURCE_EXHAUSTED` with a `google.rpc.Help` detail), nothing created. Decided at create; a refused batch
	 * counts nothing. Default null (no limit).
	 */
	enqueuedTokenLimit: number | null;
	/**
	 * The account's request-rate window for online calls (chat completions, messages, generateContent): a token
	 * bucket of `requests`, refilled continuously at `requests` per `perMs`, and, when `tokens` is set, a second one
	 * of input tokens (`estimateInputTokens` of limits.ts) with the same period. A valid call that finds a bucket
	 * short is answered 429 as its vendor does (OpenAI with `retry-after-ms` and `retry-after`, Anthropic with
	 * `retry-after`, Gemini with `QuotaFailure` and `RetryInfo` details); with `headers` (true when omitted), every
	 * answer of OpenAI and Anthropic carries their rate-limit headers (`x-ratelimit-*`, `anthropic-ratelimit-*`).
	 * Configuring it starts with full buckets. Independent of `rateLimit`. Default null (no window).
	 */
	requestRate: { requests: number; perMs: number; tokens?: number | null; headers: boolean } | null;
}

/** How a route listed in `lowQualityRoutes` comes out. */
type LowQuality = 'thin' | 'duplicate' | 'figure';

/** The figure a `figure` page invents, as the page writes it. */
export const INVENTED_FIGURE = '€4,870';

export type FakeConfigPatch = Partial<FakeConfig>;

/** A fresh copy of the defaults. */
export function defaultConfig(): FakeConfig {
	return {
		latencyMs: 0,
		rateLimit: null,
		serverErrors: null,
		failRoutes: {},
		failRoutesTimes: null,
		holdBatches: false,
		batchEndState: 'completed',
		batchStepsPerPoll: 1,
		batchPartialFraction: 0.5,
		batchErrorStyle: 'error-file',
		batchOutputOrder: 'reversed',
		hangChat: false,
		holdChat: false,
		holdFileAfterLines: null,
		holdBatchCreates: false,
		refuseFileDeletes: false,
		noBatchApi: false,
		uploadAgeS: 0,
		refuseBatchCreates: null,
		chatErrorsForTask: {},
		planFail: false,
		planDuplicateRate: 0,
		planIncludeRoutes: [],
		planInvalidRate: 0,
		lowQualityRoutes: {},
		lowQualityPersists: false,
		responders: {},
		enqueuedTokenLimit: null,
		requestRate: null,
	};
}

function show(value: unknown): string {
	if (typeof value === 'function') return 'a function';
	return JSON.stringify(value) ?? String(value);
}

function isRecord(value: unknown): value is Record<string, unknown> {
	return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function nonNegativeNumber(name: string, value: unknown): number {
	if (typeof value !== 'number' || !Number.isFinite(value) || value < 0) {
		throw new TypeError(`${name} must be a non-negative finite number, got ${show(value)}`);
	}
	return value;
}

function nonNegativeInteger(name: string, value: unknown): number {
	if (typeof value !== 'number' || !Number.isInteger(value) || value < 0) {
		throw new TypeError(`${name} must be a non-negative integer, got ${show(value)}`);
	}
	return value;
}

function positiveInteger(name: string, value: unknown): number {
	if (typeof value !== 'number' || !Number.isInteger(value) || value < 1) {
		throw new TypeError(`${name} must be a positive integer, got ${show(value)}`);
	}
	return value;
}

function positiveNumber(name: string, value: unknown): number {
	if (typeof value !== 'number' || !Number.isFinite(value) || value <= 0) {
		throw new TypeError(`${name} must be a positive finite number, got ${show(value)}`);
	}
	return value;
}

function fraction(name: string, value: unknown): number {
	if (typeof value !== 'number' || !(value >= 0 && value <= 1)) {
		throw new TypeError(`${name} must be a number from 0 to 1, got ${show(value)}`);
	}
	return value;
}

function oneOf<T extends string>(name: string, value: unknown, options: readonly T[]): T {
	if (!options.includes(value as T)) throw new TypeError(`${name} must be one of ${options.join(', ')}, got ${show(value)}`);
	return value as T;
}

function boolean(name: string, value: unknown): boolean {
	if (typeof value !== 'boolean') throw new TypeError(`${name} must be a boolean, got ${show(value)}`);
	return value;
}

function httpStatus(name: string, value: unknown, low: number): number {
	if (typeof value !== 'number' || !Number.isInteger(value) || value < low || value > 599) {
		throw new TypeError(`${name} must be an HTTP status from ${low} to 599, got ${show(value)}`);
	}
	return value;
}

const ROUTE_FAILURES = ['error', 'malformed', 'refusal', 'invalid'] as const;
const END_STATES = ['completed', 'expired', 'cancelled', 'failed'] as const;
const ERROR_STYLES = ['error-file', 'error-file-http', 'output-non-200'] as const;

type Parser = (value: unknown) => unknown;

const PARSERS: { [K in keyof FakeConfig]: Parser } = {
	latencyMs: (v) => nonNegativeNumber('latencyMs', v),
	rateLimit: (v) => {
		if (v === null) return null;
		if (!isRecord(v)) throw new TypeError(`rateLimit must be { count, retryAfterS } or null, got ${show(v)}`);
		return { count: nonNegativeInteger('rateLimit.count', v.count), retryAfterS: nonNegativeNumber('rateLimit.retryAfterS', v.retryAfterS ?? 0) };
	},
	serverErrors: (v) => {
		if (v === null) return null;
		if (!isRecord(v)) throw new TypeError(`serverErrors must be { count, status } or null, got ${show(v)}`);
		return { count: nonNegativeInteger('serverErrors.count', v.count), status: httpStatus('serverErrors.status', v.status ?? 500, 500) };
	},
	failRoutes: (v) => {
		if (!isRecord(v)) throw new TypeError(`failRoutes must be an object of route to failure, got ${show(v)}`);
		const out: Record<string, RouteFailure> = {};
		for (const [route, failure] of Object.entries(v)) out[route] = oneOf(`failRoutes[${show(route)}]`, failure, ROUTE_FAILURES);
		return out;
	},
	failRoutesTimes: (v) => (v === null ? null : nonNegativeInteger('failRoutesTimes', v)),
	holdBatches: (v) => boolean('holdBatches', v),
	batchEndState: (v) => oneOf('batchEndState', v, END_STATES),
	batchStepsPerPoll: (v) => nonNegativeInteger('batchStepsPerPoll', v),
	batchPartialFraction: (v) => fraction('batchPartialFraction', v),
	batchErrorStyle: (v) => oneOf('batchErrorStyle', v, ERROR_STYLES),
	batchOutputOrder: (v) => oneOf('batchOutputOrder', v, ['input', 'reversed'] as const),
	hangChat: (v) => boolean('hangChat', v),
	holdChat: (v) => boolean('holdChat', v),
	holdFileAfterLines: (v) => (v === null ? null : nonNegativeInteger('holdFileAfterLines', v)),
	holdBatchCreates: (v) => boolean('holdBatchCreates', v),
	refuseFileDeletes: (v) => boolean('refuseFileDeletes', v),
	noBatchApi: (v) => boolean('noBatchApi', v),
	uploadAgeS: (v) => nonNegativeInteger('uploadAgeS', v),
	refuseBatchCreates: (v) => (v === null ? null : httpStatus('refuseBatchCreates', v, 400)),
	chatErrorsForTask: (v) => {
		if (!isRecord(v)) throw new TypeError(`chatErrorsForTask must be an object of task to status, got ${show(v)}`);
		const out: Record<string, TaskError> = {};
		for (const [task, entry] of Object.entries(v)) {
			const name = `chatErrorsForTask[${show(task)}]`;
			out[task] = isRecord(entry)
				? { status: httpStatus(`${name}.status`, entry.status, 400), count: nonNegativeInteger(`${name}.count`, entry.count) }
				: httpStatus(name, entry, 400);
		}
		return out;
	},
	planFail: (v) => boolean('planFail', v),
	planDuplicateRate: (v) => fraction('planDuplicateRate', v),
	planIncludeRoutes: (v) => {
		if (!Array.isArray(v) || !v.every((route) => typeof route === 'string')) {
			throw new TypeError(`planIncludeRoutes must be an array of strings, got ${show(v)}`);
		}
		return [...v];
	},
	planInvalidRate: (v) => fraction('planInvalidRate', v),
	lowQualityRoutes: (v) => {
		if (!isRecord(v)) throw new TypeError(`lowQualityRoutes must be an object of route to "thin", "duplicate" or "figure", got ${show(v)}`);
		const out: Record<string, LowQuality> = {};
		for (const [route, kind] of Object.entries(v)) out[route] = oneOf(`lowQualityRoutes[${show(route)}]`, kind, ['thin', 'duplicate', 'figure'] as const);
		return out;
	},
	lowQualityPersists: (v) => boolean('lowQualityPersists', v),
	responders: (v) => {
		if (!isRecord(v) || !Object.values(v).every((fn) => typeof fn === 'function')) {
			throw new TypeError(`responders must be an object of task to function, got ${show(v)}`);
		}
		return { ...v };
	},
	enqueuedTokenLimit: (v) => (v === null ? null : nonNegativeInteger('enqueuedTokenLimit', v)),
	requestRate: (v) => {
		if (v === null) return null;
		if (!isRecord(v)) throw new TypeError(`requestRate must be { requests, perMs, tokens?, headers } or null, got ${show(v)}`);
		return {
			requests: positiveInteger('requestRate.requests', v.requests),
			perMs: positiveNumber('requestRate.perMs', v.perMs),
			tokens: v.tokens === undefined || v.tokens === null ? null : positiveInteger('requestRate.tokens', v.tokens),
			headers: boolean('requestRate.headers', v.headers ?? true),
		};
	},
};

/**
 * Returns `current` with the fields of `patch` validated and applied (each field replaces the old one whole).
 * Throws a TypeError naming the first bad field and value; `current` is left untouched then.
 */
export function mergeConfig(current: FakeConfig, patch: unknown): FakeConfig {
	if (!isRecord(patch)) throw new TypeError(`config patch must be an object, got ${show(patch)}`);
	const next: Record<string, unknown> = { ...current };
	for (const [key, value] of Object.entries(patch)) {
		const parse = PARSERS[key as keyof FakeConfig];
		if (!parse) throw new TypeError(`Unknown fake provider option ${show(key)}`);
		next[key] = parse(value);
	}
	return next as unknown as FakeConfig;
}

/** The config as JSON for the admin route: responders become the list of replaced tasks. */
export function configToJson(config: FakeConfig): Record<string, unknown> {
	return { ...config, responders: Object.keys(config.responders) };
}
