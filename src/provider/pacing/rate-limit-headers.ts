/** One of a key's limits as an answer's headers state it. */
export interface HeaderLimit {
	/** What the key may use per window. */
	limit: number;
	/** What is left of it now; null when the answer does not say. */
	remaining: number | null;
	/** How long until the budget is whole again, in milliseconds; null when the answer does not say. */
	resetMs: number | null;
}

/** The limits an answer's headers state: of requests, and of (input) tokens. */
export interface HeaderLimits {
	requests: HeaderLimit | null;
	tokens: HeaderLimit | null;
}

/** The header names of one vendor's limits: `${prefix}limit`, `${prefix}remaining`, `${prefix}reset`. */
interface Scheme {
	requests: { limit: string; remaining: string; reset: string };
	tokens: { limit: string; remaining: string; reset: string };
	/** How the reset is written: a Go duration (`6m0s`, `12ms`) or an RFC 3339 time. */
	reset: 'duration' | 'time';
}

const OPENAI: Scheme = {
	requests: { limit: 'x-ratelimit-limit-requests', remaining: 'x-ratelimit-remaining-requests', reset: 'x-ratelimit-reset-requests' },
	tokens: { limit: 'x-ratelimit-limit-tokens', remaining: 'x-ratelimit-remaining-tokens', reset: 'x-ratelimit-reset-tokens' },
	reset: 'duration',
};

/*
 * Anthropic's token limit of a request is its input tokens (only uncached input counts), which is what the pacer
 * estimates: `anthropic-ratelimit-tokens-*` sums input and output, and output is unknown before the answer.
 */
const ANTHROPIC: Scheme = {
	requests: { limit: 'anthropic-ratelimit-requests-limit', remaining: 'anthropic-ratelimit-requests-remaining', reset: 'anthropic-ratelimit-requests-reset' },
	tokens: { limit: 'anthropic-ratelimit-input-tokens-limit', remaining: 'anthropic-ratelimit-input-tokens-remaining', reset: 'anthropic-ratelimit-input-tokens-reset' },
	reset: 'time',
};

/**
 * The rate limits an answer's headers state, in OpenAI's `x-ratelimit-*` (resets as Go durations) or Anthropic's
 * `anthropic-ratelimit-*` (resets as RFC 3339 times, read against `now`); null when it states none (Gemini never
 * does). A header that cannot be read counts as absent; a limit without its `limit` header is not stated.
 */
export function readRateLimitHeaders(headers: Headers | null | undefined, now: number = Date.now()): HeaderLimits | null {
	if (!headers) return null;
	for (const scheme of [OPENAI, ANTHROPIC]) {
		const requests = readLimit(headers, scheme.requests, scheme.reset, now);
		const tokens = readLimit(headers, scheme.tokens, scheme.reset, now);
		if (requests || tokens) return { requests, tokens };
	}
	return null;
}

function readLimit(headers: Headers, names: Scheme['requests'], reset: Scheme['reset'], now: number): HeaderLimit | null {
	const limit = count(headers.get(names.limit));
	// Azure OpenAI has been seen sending 0 or -1 for limits it does not apply.
	if (limit === null || limit <= 0) return null;
	const resetText = headers.get(names.reset);
	const resetMs = resetText === null ? null : reset === 'duration' ? goDurationMs(resetText) : untilTimeMs(resetText, now);
	return { limit, remaining: count(headers.get(names.remaining)), resetMs };
}

function count(text: string | null): number | null {
	if (text === null || !/^\s*\d+(\.\d+)?\s*$/.test(text)) return null;
	const value = Number(text);
	return Number.isFinite(value) ? value : null;
}

const DURATION_UNITS: Record<string, number> = { h: 3_600_000, m: 60_000, s: 1000, ms: 1, us: 0.001, µs: 0.001, ns: 0.000_001 };

/** A Go duration (`1s`, `6m0s`, `1h2m3.5s`, `12ms`) in milliseconds; null when it is not one. */
export function goDurationMs(text: string): number | null {
	const trimmed = text.trim();
	if (trimmed === '0') return 0;
	if (!/^(\d+(\.\d+)?(h|ms|m|s|us|µs|ns))+$/.test(trimmed)) return null;
	let total = 0;
	for (const [, amount, unit] of trimmed.matchAll(/(\d+(?:\.\d+)?)(h|ms|m|s|us|µs|ns)/g)) total += Number(amount) * DURATION_UNITS[unit!]!;
	return total;
}

function untilTimeMs(text: string, now: number): number | null {
	const at = Date.parse(text.trim());
	return Number.isFinite(at) ? Math.max(0, at - now) : null;
}
