/**
 * The providers' capacity limits, as each vendor documents and enforces them, so that the engine's pacing can be
 * tested against them:
 *
 * - the enqueued-token limit of batches (`enqueuedTokenLimit`): OpenAI accepts a batch beyond it and fails it at
 *   validation with `token_limit_exceeded`; Anthropic and Gemini refuse the create with a 429;
 * - the request-rate window of online calls (`requestRate`): a token bucket, refilled continuously, of requests and
 *   optionally of input tokens, answered 429 in each vendor's words, with each vendor's rate-limit headers.
 *
 * One server is one account: the ledger and the bucket are shared by all three protocols of a server.
 */
import type { BatchLine, BatchObject } from './batches.ts';
import type { MessageBatchLine, MessageBatchObject } from './anthropic-batches.ts';
import { anthropicErrorBody } from './anthropic-messages.ts';
import { apiError } from './chat.ts';
import type { ChatRequest } from './chat.ts';
import type { FakeConfig } from './config.ts';
import type { GoogleBatchLine, GoogleBatchOperation } from './google-batches.ts';
import { HttpError } from './http.ts';
import type { WireMessage } from './prompt-context.ts';

/** The wire protocols whose online calls the request-rate window counts. */
export type LimitProtocol = 'openai' | 'anthropic' | 'google';

/** The organization the vendors' messages name. */
const ORGANIZATION = 'org-fake';
/**
 * The wait an Anthropic batch create refused for capacity asks for. The real API documents a `retry-after` with
 * every 429 but not its value for a full queue; a minute is the period of its other limits.
 */
const ENQUEUED_RETRY_AFTER_S = 60;
const OPENAI_ACTIVE_STATUSES: ReadonlySet<string> = new Set(['validating', 'in_progress', 'finalizing', 'cancelling']);
const GOOGLE_HELP = {
	'@type': 'type.googleapis.com/google.rpc.Help',
	links: [{ description: 'Learn more about Gemini API quotas', url: 'https://ai.google.dev/gemini-api/docs/rate-limits' }],
};
const GOOGLE_QUOTA_MESSAGE =
	'You exceeded your current quota, please check your plan and billing details. For more information on this error, head to: https://ai.google.dev/gemini-api/docs/rate-limits. To monitor your current usage, head to: https://ai.dev/rate-limit.';
const DAY_MS = 24 * 3600 * 1000;

/**
 * A refusal sent with the vendor's whole body as it is, rather than through the server's generic error shapes: Gemini's
 * `details`, and OpenAI's and Anthropic's exact words.
 */
export class LimitRefusal extends HttpError {
	readonly body: unknown;

	constructor(status: number, message: string, body: unknown, headers: Record<string, string> = {}) {
		super(status, apiError(message), headers);
		this.body = body;
	}
}

/** The characters of a message's text: its string, or the `text` of each of its parts. */
function textLength(message: WireMessage): number {
	if (typeof message.content === 'string') return message.content.length;
	if (!Array.isArray(message.content)) return 0;
	let length = 0;
	for (const part of message.content) {
		const text: unknown = typeof part === 'object' && part !== null ? (part as { text?: unknown }).text : undefined;
		if (typeof text === 'string') length += text.length;
	}
	return length;
}

/**
 * The input tokens the fake counts for one request, against `enqueuedTokenLimit` and `requestRate.tokens`:
 * `Math.ceil(characters / 4)` over the text of all its messages (the system prompt or instruction included, as each
 * protocol's parser puts it first; text parts counted without separators). A test can compute a batch's count in
 * advance as the sum of its requests' estimates, from messages written as OpenAI's chat messages.
 */
export function estimateInputTokens(request: { readonly messages: readonly WireMessage[] }): number {
	let characters = 0;
	for (const message of request.messages) characters += textLength(message);
	return Math.ceil(characters / 4);
}

/** The input tokens of a batch's requests; an invalid request (it will end in an error) counts none. */
function batchTokens(requests: Iterable<ChatRequest | null>): number {
	let tokens = 0;
	for (const request of requests) if (request) tokens += estimateInputTokens(request);
	return tokens;
}

/**
 * A duration as Go's `time.Duration` prints it, rounded to the millisecond, as OpenAI's `x-ratelimit-reset-*`
 * headers give it: `0s`, `12ms`, `1s`, `1.5s`, `6m0s`, `1h0m0s`.
 */
export function goDuration(ms: number): string {
	const total = Math.max(0, Math.round(ms));
	if (total === 0) return '0s';
	if (total < 1000) return `${total}ms`;
	const hours = Math.floor(total / 3_600_000);
	const minutes = Math.floor((total % 3_600_000) / 60_000);
	const seconds = `${Number(((total % 60_000) / 1000).toFixed(3))}s`;
	if (hours > 0) return `${hours}h${minutes}m${seconds}`;
	if (minutes > 0) return `${minutes}m${seconds}`;
	return seconds;
}

/**
 * A duration as a google.protobuf.Duration in JSON (RetryInfo's `retryDelay`): seconds with an `s` suffix and 0 or 3
 * fractional digits, `47s` or `0.250s`.
 */
function protobufDuration(ms: number): string {
	const total = Math.max(0, Math.ceil(ms));
	return total % 1000 === 0 ? `${total / 1000}s` : `${(total / 1000).toFixed(3)}s`;
}

/** A limit in the words of OpenAI's message: `2,000,000`. */
function withCommas(value: number): string {
	return value.toLocaleString('en-US');
}

/** A bucket of `capacity` units, refilled continuously at `capacity` per `perMs`, never above `capacity`. */
class TokenBucket {
	readonly capacity: number;
	readonly #perMs: number;
	#level: number;
	#updatedAt: number;

	constructor(capacity: number, perMs: number, now: number) {
		this.capacity = capacity;
		this.#perMs = perMs;
		this.#level = capacity;
		this.#updatedAt = now;
	}

	/** The units available at `now`, after the refill since the last look. */
	level(now: number): number {
		const elapsed = Math.max(0, now - this.#updatedAt);
		this.#level = Math.min(this.capacity, this.#level + (elapsed * this.capacity) / this.#perMs);
		this.#updatedAt = now;
		return this.#level;
	}

	take(amount: number, now: number): void {
		this.#level = this.level(now) - amount;
	}

	/** Ms until `amount` units are available: 0 when they are, Infinity when the bucket cannot hold them. */
	waitFor(amount: number, now: number): number {
		if (amount > this.capacity) return Infinity;
		const missing = amount - this.level(now);
		return missing <= 0 ? 0 : (missing * this.#perMs) / this.capacity;
	}

	/** Ms until the bucket is full again. */
	toFull(now: number): number {
		return ((this.capacity - this.level(now)) * this.#perMs) / this.capacity;
	}
}

type RequestRate = NonNullable<FakeConfig['requestRate']>;

/** The buckets of one `requestRate` setting; a new setting starts full. */
interface RateWindow {
	rate: RequestRate;
	requests: TokenBucket;
	tokens: TokenBucket | null;
}

/** What a call found in the window: which bucket stopped it (if any) and the wait until it would not. */
interface Shortage {
	kind: 'requests' | 'tokens';
	limit: number;
	level: number;
	requested: number;
	waitMs: number;
}

interface Enqueued {
	tokens: number;
	/** False once the batch has ended (or was forgotten): its tokens no longer count. */
	active: () => boolean;
}

type Counts = Record<LimitProtocol, number>;

function zeroCounts(): Counts {
	return { openai: 0, anthropic: 0, google: 0 };
}

/** The enqueued-token ledger and the request-rate window of one fake server, with their counters for tests. */
export class ProviderLimits {
	readonly #config: () => FakeConfig;
	readonly #now: () => number;
	#enqueued: Enqueued[] = [];
	#maxEnqueued = 0;
	#refusals = 0;
	#window: RateWindow | null = null;
	#admitted = zeroCounts();
	#limited = zeroCounts();

	/** `now` is a monotonic clock in ms (the bucket's refill); the default is `performance.now`. */
	constructor(config: () => FakeConfig, now: () => number = () => performance.now()) {
		this.#config = config;
		this.#now = now;
	}

	/** Tokens of the batches not yet ended. */
	enqueuedTokens(): number {
		this.#enqueued = this.#enqueued.filter((entry) => entry.active());
		return this.#enqueued.reduce((sum, entry) => sum + entry.tokens, 0);
	}

	/** The most tokens ever enqueued at once. */
	maxEnqueuedTokens(): number {
		return this.#maxEnqueued;
	}

	/** Batches refused (Anthropic, Gemini) or failed (OpenAI) for the enqueued-token limit. */
	capacityRefusals(): number {
		return this.#refusals;
	}

	/** Online calls the request-rate window let through (every call, when there is no window). */
	rateAdmitted(protocol?: LimitProtocol): number {
		return protocol === undefined ? sum(this.#admitted) : this.#admitted[protocol];
	}

	/** Online calls the request-rate window answered 429. */
	rateLimited(protocol?: LimitProtocol): number {
		return protocol === undefined ? sum(this.#limited) : this.#limited[protocol];
	}

	/** Forgets the ledger, the bucket and the counters (the stores forget their batches at the same time). */
	clear(): void {
		this.#enqueued = [];
		this.#maxEnqueued = 0;
		this.#refusals = 0;
		this.#window = null;
		this.#admitted = zeroCounts();
		this.#limited = zeroCounts();
	}

	/**
	 * An OpenAI batch whose file passed validation, at its create: null when it fits (its tokens count until it ends),
	 * or the `token_limit_exceeded` error that fails it at validation, as the real service does after accepting the
	 * create. A failed batch counts nothing.
	 */
	enqueueOpenAiBatch(batch: BatchObject, lines: readonly BatchLine[]): { code: string; line: null; message: string; param: null } | null {
		const limit = this.#config().enqueuedTokenLimit;
		if (this.#fits(batchTokens(lines.map((line) => line.request)), () => OPENAI_ACTIVE_STATUSES.has(batch.status))) return null;
		return {
			code: 'token_limit_exceeded',
			line: null,
			param: null,
			message: `Enqueued token limit reached for ${batch.model ?? 'unknown'} in organization ${ORGANIZATION}. Limit: ${withCommas(limit ?? 0)} enqueued tokens. Please try again once some in_progress batches have been completed.`,
		};
	}

	/** An Anthropic message batch about to be stored: counted until it ends, or refused with a 429 (nothing stored). */
	enqueueMessageBatch(batch: MessageBatchObject, lines: readonly MessageBatchLine[]): void {
		if (this.#fits(batchTokens(lines.map((line) => line.request)), () => batch.processing_status !== 'ended')) return;
		const limit = this.#config().enqueuedTokenLimit ?? 0;
		const message = `This request would exceed your organization's limit of ${withCommas(limit)} enqueued batch input tokens. Please try again once some of your message batches have ended.`;
		throw new LimitRefusal(429, message, anthropicErrorBody(429, message), { 'retry-after': String(ENQUEUED_RETRY_AFTER_S) });
	}

	/** A Gemini batch about to be stored: counted until it is done, or refused with a 429 (nothing stored). */
	enqueueGoogleBatch(operation: GoogleBatchOperation, lines: readonly GoogleBatchLine[]): void {
		if (this.#fits(batchTokens(lines.map((line) => line.request)), () => operation.done !== true)) return;
		// The real API's refusal carries only the Help link: no quota named, no retry delay.
		const body = { error: { code: 429, message: GOOGLE_QUOTA_MESSAGE, status: 'RESOURCE_EXHAUSTED', details: [GOOGLE_HELP] } };
		throw new LimitRefusal(429, GOOGLE_QUOTA_MESSAGE, body);
	}

	/**
	 * An online call, valid, about to be answered: takes one request (and its input tokens) from the window, and
	 * returns the rate-limit headers its answer carries; throws the vendor's 429 when the window is empty.
	 */
	admitCall(protocol: LimitProtocol, request: ChatRequest): Record<string, string> {
		const window = this.#currentWindow();
		if (window === null) {
			this.#admitted[protocol]++;
			return {};
		}
		const now = this.#now();
		const tokens = estimateInputTokens(request);
		const shortage = this.#shortage(window, tokens, now);
		if (shortage !== null) {
			this.#limited[protocol]++;
			throw this.#tooManyRequests(protocol, request.model, window, shortage, now);
		}
		window.requests.take(1, now);
		window.tokens?.take(tokens, now);
		this.#admitted[protocol]++;
		return this.#rateHeaders(protocol, window, now);
	}

	/** True (and the batch counted) when `tokens` more fit under the limit; false (and a refusal counted) when not. */
	#fits(tokens: number, active: () => boolean): boolean {
		const limit = this.#config().enqueuedTokenLimit;
		const enqueued = this.enqueuedTokens();
		if (limit !== null && enqueued + tokens > limit) {
			this.#refusals++;
			return false;
		}
		this.#enqueued.push({ tokens, active });
		this.#maxEnqueued = Math.max(this.#maxEnqueued, enqueued + tokens);
		return true;
	}

	/** The buckets of the current `requestRate`, made full when the setting is new (each configure makes a new one). */
	#currentWindow(): RateWindow | null {
		const rate = this.#config().requestRate;
		if (rate === null) {
			this.#window = null;
			return null;
		}
		if (this.#window?.rate !== rate) {
			const now = this.#now();
			const tokens = rate.tokens ?? null;
			this.#window = {
				rate,
				requests: new TokenBucket(rate.requests, rate.perMs, now),
				tokens: tokens === null ? null : new TokenBucket(tokens, rate.perMs, now),
			};
		}
		return this.#window;
	}

	/** The bucket that stops a call of `tokens`, the one with the longer wait when both do; null when it may go. */
	#shortage(window: RateWindow, tokens: number, now: number): Shortage | null {
		const shortages: Shortage[] = [];
		const requestWait = window.requests.waitFor(1, now);
		if (requestWait > 0) {
			shortages.push({ kind: 'requests', limit: window.requests.capacity, level: window.requests.level(now), requested: 1, waitMs: requestWait });
		}
		const tokenWait = window.tokens?.waitFor(tokens, now) ?? 0;
		if (window.tokens && tokenWait > 0) {
			shortages.push({ kind: 'tokens', limit: window.tokens.capacity, level: window.tokens.level(now), requested: tokens, waitMs: tokenWait });
		}
		return shortages.reduce<Shortage | null>((longest, shortage) => (longest === null || shortage.waitMs > longest.waitMs ? shortage : longest), null);
	}

	/**
	 * The vendor's 429 for a call the window stops. A call larger than the whole token bucket can never go: it gets
	 * the vendor's "too large" words and no wait to retry after.
	 */
	#tooManyRequests(protocol: LimitProtocol, model: string, window: RateWindow, shortage: Shortage, now: number): LimitRefusal {
		const waitMs = Number.isFinite(shortage.waitMs) ? Math.max(1, Math.ceil(shortage.waitMs)) : null;
		const headers = window.rate.headers ? this.#rateHeaders(protocol, window, now) : {};
		const perDay = window.rate.perMs === DAY_MS;
		if (protocol === 'openai') {
			const period = shortage.kind === 'requests' ? (perDay ? 'requests per day (RPD)' : 'requests per min (RPM)') : perDay ? 'tokens per day (TPD)' : 'tokens per min (TPM)';
			const used = shortage.limit - Math.floor(shortage.level);
			const message = waitMs === null
				? `Request too large for ${model} in organization ${ORGANIZATION} on ${period}: Limit ${shortage.limit}, Requested ${shortage.requested}. The input or output tokens must be reduced in order to run successfully. Visit https://platform.openai.com/account/rate-limits to learn more.`
				: `Rate limit reached for ${model} in organization ${ORGANIZATION} on ${period}: Limit ${shortage.limit}, Used ${used}, Requested ${shortage.requested}. Please try again in ${goDuration(waitMs)}. Visit https://platform.openai.com/account/rate-limits to learn more.`;
			const error = apiError(message, shortage.kind, 'rate_limit_exceeded');
			// The SDK reads `retry-after-ms` first, then `retry-after` in whole seconds.
			const retry: Record<string, string> = waitMs === null ? {} : { 'retry-after-ms': String(waitMs), 'retry-after': String(Math.ceil(waitMs / 1000)) };
			return new LimitRefusal(429, message, { error }, { ...headers, ...retry });
		}
		if (protocol === 'anthropic') {
			const unit = shortage.kind === 'requests' ? 'requests' : 'input tokens';
			const message = `This request would exceed the rate limit for your organization (${ORGANIZATION}) of ${withCommas(shortage.limit)} ${unit} per ${perDay ? 'day' : 'minute'}. For details, refer to: https://docs.claude.com/en/api/rate-limits. You can see the response headers for current usage. Please reduce the prompt length or try again later.`;
			const retry: Record<string, string> = waitMs === null ? {} : { 'retry-after': String(Math.ceil(waitMs / 1000)) };
			return new LimitRefusal(429, message, anthropicErrorBody(429, message), { ...headers, ...retry });
		}
		return new LimitRefusal(429, GOOGLE_QUOTA_MESSAGE, googleQuotaBody(model, shortage, waitMs, perDay));
	}

	/** The vendor's rate-limit headers after this call (Gemini sends none); none when `headers` is off. */
	#rateHeaders(protocol: LimitProtocol, window: RateWindow, now: number): Record<string, string> {
		if (!window.rate.headers || protocol === 'google') return {};
		const buckets: [string, TokenBucket][] = [['requests', window.requests]];
		if (window.tokens) buckets.push([protocol === 'openai' ? 'tokens' : 'input-tokens', window.tokens]);
		const headers: Record<string, string> = {};
		for (const [name, bucket] of buckets) {
			const remaining = String(Math.max(0, Math.floor(bucket.level(now))));
			const toFull = bucket.toFull(now);
			if (protocol === 'openai') {
				headers[`x-ratelimit-limit-${name}`] = String(bucket.capacity);
				headers[`x-ratelimit-remaining-${name}`] = remaining;
				headers[`x-ratelimit-reset-${name}`] = goDuration(toFull);
			} else {
				// Anthropic rounds token counts to the nearest thousand; the fake keeps them exact, so that small test
				// limits stay readable.
				headers[`anthropic-ratelimit-${name}-limit`] = String(bucket.capacity);
				headers[`anthropic-ratelimit-${name}-remaining`] = remaining;
				headers[`anthropic-ratelimit-${name}-reset`] = new Date(Date.now() + Math.ceil(toFull)).toISOString();
			}
		}
		return headers;
	}
}

/** Gemini's 429 for a quota: the quota that stopped the call, the Help link, and the wait as a RetryInfo. */
function googleQuotaBody(model: string, shortage: Shortage, waitMs: number | null, perDay: boolean) {
	const period = perDay ? 'PerDay' : 'PerMinute';
	const violation = shortage.kind === 'requests'
		? { quotaMetric: 'generativelanguage.googleapis.com/generate_content_paid_tier_requests', quotaId: `GenerateRequests${period}PerProjectPerModel` }
		: { quotaMetric: 'generativelanguage.googleapis.com/generate_content_paid_tier_input_token_count', quotaId: `GenerateContentPaidTierInputTokensPerModel${period}` };
	const retry = waitMs === null ? '' : ` Please retry in ${protobufDuration(waitMs)}.`;
	const details: Record<string, unknown>[] = [
		{
			'@type': 'type.googleapis.com/google.rpc.QuotaFailure',
			violations: [{ ...violation, quotaDimensions: { location: 'global', model }, quotaValue: String(shortage.limit) }],
		},
		GOOGLE_HELP,
	];
	if (waitMs !== null) details.push({ '@type': 'type.googleapis.com/google.rpc.RetryInfo', retryDelay: protobufDuration(waitMs) });
	return {
		error: {
			code: 429,
			message: `${GOOGLE_QUOTA_MESSAGE}\n* Quota exceeded for metric: ${violation.quotaMetric}, limit: ${shortage.limit}, model: ${model}${retry}`,
			status: 'RESOURCE_EXHAUSTED',
			details,
		},
	};
}

function sum(counts: Counts): number {
	return counts.openai + counts.anthropic + counts.google;
}
