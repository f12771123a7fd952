import { providerCalls, providerLatency, providerRateLimited } from '../metrics/metrics.ts';
import type { Logger } from '../shared/logger.ts';
import type { ProviderKind } from '../shared/provider-kinds.ts';
import { backoffDelay, retryAfterMs, type BackoffOptions, type Sleep } from './backoff.ts';
import type { Pacer, PaceSlot } from './pacing/pacer.ts';
import { ProviderCallError } from './provider-call-error.ts';
import { classifyError, rateWaitError, toCallError, type ProviderFailure, type SdkErrorClasses } from './provider-failure.ts';

/**
 * One attempt's result: a value, or a failure the policy decides about; with the answer's headers when the attempt
 * has them, for the pacer to learn the key's limits from.
 */
export type Attempt<T> = ({ ok: true; value: T } | { ok: false; failure: ProviderFailure }) & { headers?: Headers | null };

/**
 * `mayRetry` of a batch create: it is never repeated in the call, not even after a 429. The SDKs send no idempotency
 * key, and a 429 there is the provider's batch queue or rate limit, which the engine waits for between its steps
 * (engine/capacity-wait.ts).
 */
export const neverRepeated = (): boolean => false;

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
	/**
	 * An online call (a page or a plan), with its estimated input tokens: each attempt first takes a slot of the key's
	 * pacer, and its 429s are bounded by the policy's `rateWaitMs` rather than counted as attempts.
	 */
	paced?: { tokens: number };
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
	/** The provider kind, as the 429 counter names it. Default `openai`. */
	provider?: ProviderKind;
	/** The pacing of the key, for the online calls. Default none: they go unpaced. */
	pacer?: Pacer | undefined;
	/**
	 * How long an online call may wait, in all, for its key's rate limit (slots of the pacer, and the waits its 429s
	 * ask for) before it fails with a retryable `rate_limited` error. Default 300000.
	 */
	rateWaitMs?: number;
}

const DEFAULT_RATE_WAIT_MS = 300_000;

/**
 * The one bounded retry policy of every provider, with the SDKs' own retries switched off: 429 (honouring
 * `retry-after`), 408/409/5xx, connection errors, timeouts, and the failures an attempt reports itself (malformed,
 * refused or truncated output, output the request's validator rejects) are retried with exponential backoff;
 * anything else fails at once with a {@link ProviderCallError}. Each attempt is timed and counted in the metrics.
 *
 * An online call (`paced`) takes a slot of its key's pacer before each attempt, and a 429 does not count towards
 * `maxAttempts`: the call waits (the provider's hint, or the pacer's next slot) and goes again, until it has waited
 * `rateWaitMs` in all; then it fails with a retryable `rate_limited` error, which the engine takes for "not now".
 */
export function createRetrier(policy: RetryPolicy): <T>(context: RetryContext, attempt: () => Promise<Attempt<T>>) => Promise<T> {
	const { maxAttempts, backoff, maxRetryAfterMs, sleep, logger, secrets, sdk, pacer } = policy;
	const provider = policy.provider ?? pacer?.provider ?? 'openai';
	const rateWaitMs = policy.rateWaitMs ?? DEFAULT_RATE_WAIT_MS;
	return async function withRetries<T>(context: RetryContext, attempt: () => Promise<Attempt<T>>): Promise<T> {
		const { op, signal, logContext, paced } = context;
		/** Failed attempts that count towards maxAttempts: every failure but an online call's 429. */
		let counted = 0;
		/** What an online call has waited for its key's rate limit so far. */
		let rateWaited = 0;
		let lastRateLimit: ProviderFailure | null = null;
		for (let number = 1; ; number++) {
			if (signal?.aborted) throw toCallError({ reason: 'aborted', retryable: false }, number - 1 || 1);
			let slot: PaceSlot | null = null;
			if (paced && pacer) {
				try {
					slot = await pacer.acquire({ tokens: paced.tokens, maxWaitMs: rateWaitMs - rateWaited, signal });
				} catch (error) {
					if (signal?.aborted) throw toCallError({ reason: 'aborted', retryable: false }, number - 1 || 1);
					throw error;
				}
				if (!slot) throw giveUp(rateWaitError(lastRateLimit, number - 1, rateWaitMs), lastRateLimit);
				rateWaited += slot.waitedMs;
			}
			let outcome: Attempt<T>;
			let headers: Headers | null | undefined;
			const started = performance.now();
			try {
				outcome = await attempt();
				headers = outcome.headers;
			} catch (error) {
				if (error instanceof ProviderCallError) {
					if (slot) pacer?.observe(null);
					throw error;
				}
				const failure = classifyError(error, secrets, sdk);
				headers = (error as { headers?: Headers }).headers;
				if (failure.reason === 'rate_limited' || failure.reason === 'server_error') {
					const wait = retryAfterMs(headers, maxRetryAfterMs);
					if (wait !== null) failure.retryAfterMs = wait;
				}
				// A timeout or reset seen after the caller aborted is the abort, not a provider fault.
				outcome = { ok: false, failure: signal?.aborted ? { reason: 'aborted', retryable: false } : failure };
			}
			providerLatency.observe({ kind: op }, (performance.now() - started) / 1000);
			providerCalls.inc({ kind: op, outcome: outcome.ok ? 'ok' : outcome.failure.reason });
			// What the answer says of the key's limits: its headers, and for a 429 the wait it asks for.
			if (slot && pacer) {
				if (!outcome.ok && outcome.failure.reason === 'rate_limited') await pacer.rateLimited(slot, outcome.failure.retryAfterMs ?? null, headers);
				else pacer.observe(headers);
			}
			if (outcome.ok) return outcome.value;
			const { failure } = outcome;
			const fields = { ...logContext, op, attempt: number, maxAttempts, reason: failure.reason, status: failure.status, detail: failure.detail };
			const mayRetry = failure.retryable && (context.mayRetry?.(failure) ?? true);
			if (failure.reason === 'rate_limited') providerRateLimited.inc({ provider });
			if (failure.reason === 'rate_limited' && paced && mayRetry) {
				lastRateLimit = failure;
				// With a pacer, the wait is its hold (the hint, shared with every instance) and its next slot, taken by the
				// next attempt; without one, the hint or a backoff by the 429s seen so far.
				const delayMs = slot ? 0 : (failure.retryAfterMs ?? backoffDelay(number - counted, backoff));
				if (rateWaited + delayMs > rateWaitMs) throw giveUp(rateWaitError(failure, number, rateWaitMs), failure);
				rateWaited += delayMs;
				logger.warn({ ...fields, delayMs, rateWaitedMs: Math.round(rateWaited) }, 'pseo-automation: provider call rate limited; retrying');
				await pause(delayMs, number);
				continue;
			}
			counted++;
			if (!mayRetry || counted >= maxAttempts) {
				logger.warn(fields, 'pseo-automation: provider call failed');
				throw toCallError(failure, number);
			}
			const delayMs = failure.retryAfterMs ?? backoffDelay(counted, backoff);
			logger.warn({ ...fields, delayMs }, 'pseo-automation: provider call failed; retrying');
			await pause(delayMs, number);
		}

		async function pause(delayMs: number, number: number): Promise<void> {
			if (delayMs <= 0) return;
			try {
				await sleep(delayMs, signal);
			} catch {
				throw toCallError({ reason: 'aborted', retryable: false }, number);
			}
		}

		function giveUp(error: ProviderCallError, failure: ProviderFailure | null): ProviderCallError {
			logger.warn({ ...logContext, op, attempts: error.attempts, reason: 'rate_limited', status: failure?.status, detail: failure?.detail, rateWaitMs }, 'pseo-automation: provider call still rate limited after its wait budget; handed back');
			return error;
		}
	};
}
