import { providerCalls, providerLatency } from '../metrics/metrics.ts';
import type { Logger } from '../shared/logger.ts';
import { backoffDelay, retryAfterMs, type BackoffOptions, type Sleep } from './backoff.ts';
import { ProviderCallError } from './provider-call-error.ts';
import { classifyError, toCallError, type ProviderFailure, type SdkErrorClasses } from './provider-failure.ts';

/** One attempt's result: a value, or a failure the policy decides about. */
export type Attempt<T> = { ok: true; value: T } | { ok: false; failure: ProviderFailure };

export interface RetryContext {
	/** The operation, as the metrics and log lines name it (`chat`, `create_batch`...). */
	op: string;
	signal?: AbortSignal | undefined;
	logContext?: Record<string, unknown> | undefined;
	/**
	 * Narrows which failures may be retried. Creating calls use it: the SDKs send no idempotency key, so a
	 * request that may have reached the server is not repeated.
	 */
	mayRetry?: (failure: ProviderFailure) => boolean;
}

export interface RetryPolicy {
	maxAttempts: number;
	backoff: BackoffOptions;
	maxRetryAfterMs: number;
	sleep: Sleep;
	logger: Logger;
	/** Values masked in every detail the policy keeps (the key, credential headers). */
	secrets: readonly (string | undefined)[];
	/** The vendor SDK's error classes. */
	sdk?: SdkErrorClasses;
}

/**
 * The one bounded retry policy of every provider, with the SDKs' own retries switched off: 429 (honouring
 * `retry-after`), 408/409/5xx, connection errors, timeouts, and the failures an attempt reports itself (malformed,
 * refused or truncated output, output the request's validator rejects) are retried with exponential backoff;
 * anything else fails at once with a {@link ProviderCallError}. Each attempt is timed and counted in the metrics.
 */
export function createRetrier(policy: RetryPolicy): <T>(context: RetryContext, attempt: () => Promise<Attempt<T>>) => Promise<T> {
	const { maxAttempts, backoff, maxRetryAfterMs, sleep, logger, secrets, sdk } = policy;
	return async function withRetries<T>(context: RetryContext, attempt: () => Promise<Attempt<T>>): Promise<T> {
		const { op, signal, logContext } = context;
		for (let number = 1; ; number++) {
			if (signal?.aborted) throw toCallError({ reason: 'aborted', retryable: false }, number - 1 || 1);
			let outcome: Attempt<T>;
			const started = performance.now();
			try {
				outcome = await attempt();
			} catch (error) {
				if (error instanceof ProviderCallError) throw error;
				const failure = classifyError(error, secrets, sdk);
				if (failure.reason === 'rate_limited' || failure.reason === 'server_error') {
					const headers = (error as { headers?: Headers }).headers;
					const wait = retryAfterMs(headers, maxRetryAfterMs);
					if (wait !== null) failure.retryAfterMs = wait;
				}
				// A timeout or reset seen after the caller aborted is the abort, not a provider fault.
				outcome = { ok: false, failure: signal?.aborted ? { reason: 'aborted', retryable: false } : failure };
			}
			providerLatency.observe({ kind: op }, (performance.now() - started) / 1000);
			providerCalls.inc({ kind: op, outcome: outcome.ok ? 'ok' : outcome.failure.reason });
			if (outcome.ok) return outcome.value;
			const { failure } = outcome;
			const retry = failure.retryable && (context.mayRetry?.(failure) ?? true) && number < maxAttempts;
			const fields = { ...logContext, op, attempt: number, maxAttempts, reason: failure.reason, status: failure.status, detail: failure.detail };
			if (!retry) {
				logger.warn(fields, 'pseo-automation: provider call failed');
				throw toCallError(failure, number);
			}
			const delayMs = failure.retryAfterMs ?? backoffDelay(number, backoff);
			logger.warn({ ...fields, delayMs }, 'pseo-automation: provider call failed; retrying');
			try {
				await sleep(delayMs, signal);
			} catch {
				throw toCallError({ reason: 'aborted', retryable: false }, number);
			}
		}
	};
}
