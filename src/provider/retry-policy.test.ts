import { describe, expect, it } from 'vitest';
import type { Logger } from '../shared/logger.ts';
import { metricsRegistry } from '../metrics/metrics.ts';
import { createPacer } from './pacing/pacer.ts';
import { createMemoryPacingStore } from './pacing/pacing-store.ts';
import { ProviderCallError } from './provider-call-error.ts';
import type { ProviderFailure } from './provider-failure.ts';
import { createRetrier, type Attempt, type RetryPolicy } from './retry-policy.ts';

const silent: Logger = { debug: () => {}, info: () => {}, warn: () => {}, error: () => {} };
const RATE_LIMITED: ProviderFailure = { reason: 'rate_limited', retryable: true, status: 429, detail: 'Rate limit reached' };

/** A retrier whose sleeps are recorded and move a clock on, with the pacer (if any) on the same clock. */
function retrier(policy: Partial<RetryPolicy> & { rpm?: number } = {}) {
	const clock = { now: 1_700_000_000_000 };
	const sleeps: number[] = [];
	const sleep = async (ms: number) => {
		sleeps.push(ms);
		clock.now += ms;
	};
	const pacer =
		policy.rpm !== undefined
			? createPacer({
					key: 'openai:retry-test',
					provider: 'openai',
					configured: { requestsPerMinute: policy.rpm, tokensPerMinute: null },
					store: createMemoryPacingStore(),
					logger: silent,
					sleep,
					now: () => clock.now,
				})
			: undefined;
	const withRetries = createRetrier({
		maxAttempts: 3,
		backoff: { baseMs: 100, maxMs: 1000 },
		maxRetryAfterMs: 60_000,
		sleep,
		logger: silent,
		secrets: [],
		pacer,
		...policy,
	});
	return { withRetries, sleeps, clock };
}

/** Attempts that fail as `failures` say, in turn, then succeed; counted. */
function attempts(failures: ProviderFailure[]) {
	let made = 0;
	const attempt = async (): Promise<Attempt<string>> => {
		const failure = failures[made++];
		return failure ? { ok: false, failure: { ...failure } } : { ok: true, value: 'done' };
	};
	return { attempt, made: () => made };
}

async function rateLimitedCount(provider: string): Promise<number> {
	const found = (await metricsRegistry.getMetricsAsJSON()).find((entry) => entry.name === 'pseo_provider_rate_limited_total');
	return ((found?.values ?? []) as { labels: Record<string, unknown>; value: number }[]).filter((value) => value.labels['provider'] === provider).reduce((sum, value) => sum + value.value, 0);
}

describe('createRetrier', () => {
	it('an online call\'s 429s do not count towards maxAttempts: it goes on until it is answered', async () => {
		const { withRetries, sleeps } = retrier();
		const { attempt, made } = attempts(Array.from({ length: 6 }, () => ({ ...RATE_LIMITED, retryAfterMs: 1000 })));
		await expect(withRetries({ op: 'chat', paced: { tokens: 10 } }, attempt)).resolves.toBe('done');
		expect(made()).toBe(7);
		expect(sleeps).toEqual([1000, 1000, 1000, 1000, 1000, 1000]);
	});

	it('an online call still counts every other failure: three server errors end it', async () => {
		const { withRetries } = retrier();
		const failures: ProviderFailure[] = [RATE_LIMITED, { reason: 'server_error', retryable: true, status: 500 }, RATE_LIMITED, { reason: 'server_error', retryable: true, status: 502 }, { reason: 'server_error', retryable: true, status: 503 }];
		const { attempt, made } = attempts(failures);
		await expect(withRetries({ op: 'chat', paced: { tokens: 10 } }, attempt)).rejects.toMatchObject({ reason: 'server_error', status: 503, attempts: 5 });
		expect(made()).toBe(5);
	});

	it('an online call still rate limited after rateWaitMs fails with a retryable rate_limited error, before waiting in vain', async () => {
		const { withRetries, sleeps } = retrier({ rateWaitMs: 10_000 });
		const { attempt, made } = attempts(Array.from({ length: 100 }, () => ({ ...RATE_LIMITED, retryAfterMs: 3000 })));
		const error = (await withRetries({ op: 'chat', paced: { tokens: 10 } }, attempt).catch((caught: unknown) => caught)) as ProviderCallError;
		expect(error).toBeInstanceOf(ProviderCallError);
		expect(error).toMatchObject({ reason: 'rate_limited', retryable: true, status: 429, attempts: 4 });
		expect(error.message).toBe('Provider rate limit (HTTP 429): still limited after waiting 10 s (PSEO_PROVIDER_RATE_WAIT_MS) and 4 attempts: Rate limit reached');
		expect(made()).toBe(4);
		expect(sleeps).toEqual([3000, 3000, 3000]);
	});

	it('an online call waits its key\'s slots, and gives up when the next one comes after rateWaitMs', async () => {
		const { withRetries, clock } = retrier({ rpm: 6, rateWaitMs: 15_000 });
		const start = clock.now;
		const ok = async (): Promise<Attempt<string>> => ({ ok: true, value: 'done' });
		for (let i = 0; i < 3; i++) await withRetries({ op: 'chat', paced: { tokens: 10 } }, ok);
		expect(clock.now - start).toBe(20_000);
		// This call waits 10 s for its slot and is answered 429: the slot after that is 10 s further, beyond 15 s in all.
		const { attempt, made } = attempts([{ ...RATE_LIMITED, retryAfterMs: 0 }]);
		const error = (await withRetries({ op: 'chat', paced: { tokens: 10 } }, attempt).catch((caught: unknown) => caught)) as ProviderCallError;
		expect(error).toMatchObject({ reason: 'rate_limited', retryable: true, status: 429, attempts: 1 });
		expect(made()).toBe(1);
		expect(clock.now - start).toBe(30_000);
	});

	it('an online call that never gets a slot says so, without a status', async () => {
		const { withRetries } = retrier({ rpm: 1, rateWaitMs: 5000 });
		await withRetries({ op: 'chat', paced: { tokens: 10 } }, async () => ({ ok: true, value: 'first' }));
		const error = (await withRetries({ op: 'chat', paced: { tokens: 10 } }, async () => ({ ok: true, value: 'second' })).catch((caught: unknown) => caught)) as ProviderCallError;
		expect(error).toMatchObject({ reason: 'rate_limited', retryable: true, attempts: 0 });
		expect(error.status).toBeUndefined();
		expect(error.message).toBe('Provider rate limit: no request slot within 5 s (PSEO_PROVIDER_RATE_WAIT_MS)');
	});

	it('a 429 with a pacer holds the key for the hint: the next attempt waits for it through the pacer', async () => {
		const { withRetries, clock } = retrier({ rpm: 600 });
		const start = clock.now;
		const { attempt } = attempts([{ ...RATE_LIMITED, retryAfterMs: 2000 }]);
		await expect(withRetries({ op: 'chat', paced: { tokens: 10 } }, attempt)).resolves.toBe('done');
		expect(clock.now - start).toBe(2000);
	});

	it('other calls keep counting 429s as attempts, as batch creates rely on', async () => {
		const { withRetries } = retrier();
		const { attempt, made } = attempts(Array.from({ length: 5 }, () => ({ ...RATE_LIMITED, retryAfterMs: 10 })));
		await expect(withRetries({ op: 'create_batch' }, attempt)).rejects.toMatchObject({ reason: 'rate_limited', attempts: 3 });
		expect(made()).toBe(3);
	});

	it('a spent quota is not retried', async () => {
		const { withRetries } = retrier();
		const { attempt, made } = attempts([{ reason: 'quota_exhausted', retryable: false, status: 429 }]);
		await expect(withRetries({ op: 'chat', paced: { tokens: 10 } }, attempt)).rejects.toMatchObject({ reason: 'quota_exhausted', retryable: false, attempts: 1 });
		expect(made()).toBe(1);
	});

	it('counts 429s by provider', async () => {
		const before = await rateLimitedCount('google');
		const { withRetries } = retrier({ provider: 'google' });
		const { attempt } = attempts([RATE_LIMITED, RATE_LIMITED]);
		await withRetries({ op: 'chat', paced: { tokens: 1 } }, attempt);
		expect((await rateLimitedCount('google')) - before).toBe(2);
	});
});
