import type { Logger } from '../shared/logger.ts';
import type { ProviderKind } from '../shared/provider-kinds.ts';
import { assertBackoff, DEFAULT_BACKOFF, defaultSleep, type BackoffOptions, type Sleep } from './backoff.ts';
import { positiveInteger } from './call-checks.ts';
import type { Pacer } from './pacing/pacer.ts';
import type { RetryPolicy } from './retry-policy.ts';

/** The options of a vendor's provider for pages and plans (anthropic/, google/). */
export interface ProviderOptions {
	/** The vendor's key (from the environment, or Settings → AI). */
	apiKey: string;
	/** Another root of the vendor's API (a gateway, or the tests' provider). Default: the SDK's. */
	baseURL?: string;
	/** The model of every request. */
	model: string;
	/** Time limit of one HTTP attempt, in milliseconds. Default 120000. */
	timeoutMs?: number;
	/** Attempts per call, the first included. Default 4. */
	maxAttempts?: number;
	backoff?: BackoffOptions;
	/** Ceiling for a wait the provider asks for. Default 60000. */
	maxRetryAfterMs?: number;
	/** Output tokens one answer may use. Default 16000: a long page with its FAQ stays well within it. */
	maxTokens?: number;
	/** Headers sent with every request. Default none. */
	headers?: Record<string, string>;
	logger: Logger;
	/** Waits between attempts; tests pass a fast one. */
	sleep?: Sleep;
	/** The pacing of the key's online calls (pacing/pacer.ts). Default none: they go unpaced. */
	pacer?: Pacer;
	/** How long an online call may wait for the key's rate limit in all. Default 300000. */
	rateWaitMs?: number;
}

/** The options checked, with their defaults, and the retry policy they make (without the SDK's error classes). */
export interface CheckedOptions {
	apiKey: string;
	baseURL: string | undefined;
	model: string;
	timeoutMs: number;
	maxTokens: number;
	maxRetryAfterMs: number;
	headers: Record<string, string> | undefined;
	/** What no error or log line may show: the key, and header values (a gateway's key may be one). */
	secrets: string[];
	retry: RetryPolicy;
}

/** Checks a provider's options at construction: a programming error fails at once with a TypeError naming it. */
export function checkProviderOptions(options: ProviderOptions, provider: ProviderKind): CheckedOptions {
	const { apiKey, baseURL, model, logger, headers } = options;
	if (typeof apiKey !== 'string' || apiKey.trim() === '') throw new TypeError('Expected `apiKey` to be a non-empty string');
	if (typeof model !== 'string' || model.trim() === '') throw new TypeError(`Expected \`model\` to be a non-empty string, got \`${String(model)}\``);
	const backoff = options.backoff ?? DEFAULT_BACKOFF;
	assertBackoff(backoff);
	const maxRetryAfterMs = positiveInteger('maxRetryAfterMs', options.maxRetryAfterMs, 60_000, 0);
	const secrets = [apiKey, ...Object.values(headers ?? {})];
	return {
		apiKey,
		baseURL,
		model,
		timeoutMs: positiveInteger('timeoutMs', options.timeoutMs, 120_000),
		maxTokens: positiveInteger('maxTokens', options.maxTokens, 16_000),
		maxRetryAfterMs,
		headers,
		secrets,
		retry: {
			maxAttempts: positiveInteger('maxAttempts', options.maxAttempts, 4),
			backoff,
			maxRetryAfterMs,
			sleep: options.sleep ?? defaultSleep,
			logger,
			secrets,
			provider,
			pacer: options.pacer,
			rateWaitMs: positiveInteger('rateWaitMs', options.rateWaitMs, 300_000, 0),
		},
	};
}
