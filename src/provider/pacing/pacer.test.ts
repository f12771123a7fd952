import { describe, expect, it } from 'vitest';
import type { Logger } from '../../shared/logger.ts';
import { metricsRegistry } from '../../metrics/metrics.ts';
import { createPacer, type ConfiguredLimits, type PacerOptions } from './pacer.ts';
import { createMemoryPacingStore, type PacingStore } from './pacing-store.ts';

const T0 = 1_700_000_000_000;
const NONE: ConfiguredLimits = { requestsPerMinute: null, tokensPerMinute: null };

function recordingLogger(): Logger & { lines: { level: string; obj: object; msg?: string }[] } {
	const lines: { level: string; obj: object; msg?: string }[] = [];
	const at = (level: string) => (obj: object, msg?: string) => lines.push({ level, obj, ...(msg !== undefined ? { msg } : {}) });
	return { lines, debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') };
}

/**
 * A pacer on a clock of its own: `sleep` moves the clock on, so that calls made one after another see the time
 * their waits took.
 */
function pacerWith(options: Partial<PacerOptions> & { clock?: { now: number }; answered?: boolean } = {}) {
	const clock = options.clock ?? { now: T0 };
	const sleeps: number[] = [];
	const logger = recordingLogger();
	const pacer = createPacer({
		key: 'openai:test',
		provider: 'openai',
		configured: NONE,
		store: createMemoryPacingStore(),
		logger,
		sleep: async (ms, signal) => {
			if (signal?.aborted) throw signal.reason;
			sleeps.push(ms);
			clock.now += ms;
		},
		now: () => clock.now,
		...options,
	});
	// The key has answered before (and said nothing of its limits): calls need not wait for a first answer.
	if (options.answered !== false) pacer.observe(null);
	return { pacer, clock, sleeps, logger };
}

const take = (pacer: ReturnType<typeof pacerWith>['pacer'], tokens = 10, maxWaitMs = 60_000) => pacer.acquire({ tokens, maxWaitMs });

/** When `count` calls made one after another went, in ms after T0. */
async function sentTimes(pacer: ReturnType<typeof pacerWith>['pacer'], count: number, tokens = 10): Promise<number[]> {
	const times: number[] = [];
	for (let i = 0; i < count; i++) times.push((await take(pacer, tokens))!.sentAt - T0);
	return times;
}

async function metric(name: string, provider: string): Promise<number> {
	const found = (await metricsRegistry.getMetricsAsJSON()).find((entry) => entry.name === name);
	const values = (found?.values ?? []) as { labels: Record<string, unknown>; value: number; metricName?: string }[];
	return values.filter((value) => value.labels['provider'] === provider && (value.metricName === undefined || value.metricName === name)).reduce((sum, value) => sum + value.value, 0);
}

describe('createPacer', () => {
	it('acquire lets calls of a key with no known limit go at once, without a reservation', async () => {
		const store = createMemoryPacingStore();
		let reservations = 0;
		const counting: PacingStore = { ...store, reserve: (...args) => (reservations++, store.reserve(...args)) };
		const { pacer, sleeps } = pacerWith({ store: counting });
		for (let i = 0; i < 20; i++) expect(await take(pacer)).toEqual({ sentAt: T0, waitedMs: 0, rate: null });
		expect(sleeps).toEqual([]);
		expect(reservations).toBe(0);
	});

	it('acquire lets the first call of a key go alone, and the others once it is answered', async () => {
		const { pacer, sleeps } = pacerWith({ answered: false });
		const first = await take(pacer);
		let released = 0;
		const others = Array.from({ length: 3 }, () => take(pacer).then((slot) => (released++, slot)));
		await new Promise((resolve) => setTimeout(resolve, 20));
		expect(released).toBe(0);
		// Its answer states a limit of 4 a second: the others are paced to it.
		pacer.observe(new Headers({ 'x-ratelimit-limit-requests': '4', 'x-ratelimit-remaining-requests': '3', 'x-ratelimit-reset-requests': '250ms' }));
		const slots = await Promise.all(others);
		expect(first).toEqual({ sentAt: T0, waitedMs: 0, rate: null });
		expect(slots.map((slot) => slot!.sentAt - T0)).toEqual([0, 0, 0]);
		expect(sleeps).toEqual([]);
		expect(released).toBe(3);
	});

	it('acquire paces to PSEO_PROVIDER_RPM: 240 a minute is a call every 250 ms after a burst', async () => {
		const { pacer } = pacerWith({ configured: { requestsPerMinute: 240, tokensPerMinute: null } });
		// A minute's limit has the burst of a second at most (0.9 s of budget: three calls), then 250 ms apart.
		expect(await sentTimes(pacer, 6)).toEqual([0, 0, 0, 100, 350, 600]);
	});

	it('acquire paces to PSEO_PROVIDER_TPM by the call\'s estimated tokens', async () => {
		const { pacer } = pacerWith({ configured: { requestsPerMinute: null, tokensPerMinute: 60_000 } });
		expect(await sentTimes(pacer, 3, 3000)).toEqual([0, 3000, 6000]);
	});

	it('observe learns a limit from OpenAI\'s headers, and its window from the reset', async () => {
		const { pacer } = pacerWith();
		// 4 requests, 1 in use, whole again in 250 ms: a window of one second.
		pacer.observe(new Headers({ 'x-ratelimit-limit-requests': '4', 'x-ratelimit-remaining-requests': '3', 'x-ratelimit-reset-requests': '250ms' }));
		expect(await sentTimes(pacer, 6)).toEqual([0, 0, 0, 100, 350, 600]);
	});

	it('observe takes a minute for the window until an answer tells otherwise', async () => {
		const { pacer } = pacerWith();
		pacer.observe(new Headers({ 'anthropic-ratelimit-requests-limit': '60', 'anthropic-ratelimit-requests-remaining': '60' }));
		expect(await sentTimes(pacer, 3)).toEqual([0, 1000, 2000]);
	});

	it('observe holds the key when an answer says nothing is left', async () => {
		const { pacer } = pacerWith();
		pacer.observe(new Headers({ 'x-ratelimit-limit-requests': '4', 'x-ratelimit-remaining-requests': '0', 'x-ratelimit-reset-requests': '1s' }));
		expect(await sentTimes(pacer, 1)).toEqual([250]);
	});

	it('configured limits win over the headers', async () => {
		const { pacer } = pacerWith({ configured: { requestsPerMinute: 60, tokensPerMinute: null } });
		pacer.observe(new Headers({ 'x-ratelimit-limit-requests': '1000', 'x-ratelimit-remaining-requests': '999', 'x-ratelimit-reset-requests': '60ms' }));
		expect(await sentTimes(pacer, 3)).toEqual([0, 1000, 2000]);
	});

	it('acquire resolves to null at once when the slot would come after maxWaitMs, and takes nothing', async () => {
		const { pacer, sleeps } = pacerWith({ configured: { requestsPerMinute: 60, tokensPerMinute: null } });
		await take(pacer);
		expect(await take(pacer, 10, 500)).toBeNull();
		expect(sleeps).toEqual([]);
		expect(await take(pacer, 10, 1000)).toEqual({ sentAt: T0 + 1000, waitedMs: 1000, rate: 1 });
	});

	it('rateLimited holds every instance of the key for the wait the provider asked for', async () => {
		const store = createMemoryPacingStore();
		const clock = { now: T0 };
		const one = pacerWith({ store, clock });
		const other = pacerWith({ store, clock });
		const slot = (await take(one.pacer))!;
		await one.pacer.rateLimited(slot, 2000, null);
		// The other instance reads the hold within a second of it being set.
		clock.now += 1000;
		expect(await take(other.pacer)).toMatchObject({ sentAt: T0 + 2000 });
	});

	it('rateLimited paces a key with no known limit at half the rate it was seen at, then faster as no 429 comes', async () => {
		const { pacer, clock, logger } = pacerWith();
		// Eight calls in the last two seconds: four a second.
		for (let i = 0; i < 9; i++) {
			await take(pacer);
			if (i < 8) clock.now += 250;
		}
		await pacer.rateLimited({ sentAt: clock.now, waitedMs: 0, rate: null }, null, null);
		expect(logger.lines.find((line) => line.level === 'info')?.obj).toMatchObject({ provider: 'openai', requestsPerSecond: 2 });
		const start = clock.now;
		const times: number[] = [];
		for (let i = 0; i < 8; i++) times.push((await take(pacer))!.sentAt - start);
		// The provider's bucket is empty: no burst, the first call a unit (500 ms) later, then two a second and more,
		// as the rate doubles every two seconds.
		expect(times[0]).toBe(500);
		expect(times[1]! - times[0]!).toBeLessThanOrEqual(500);
		expect(times[7]! - times[1]!).toBeGreaterThan(1500);
		expect(times[7]! - times[1]!).toBeLessThan(3000);
	});

	it('rateLimited cuts the learnt rate once for the calls that went at it, not once per 429', async () => {
		const store = createMemoryPacingStore();
		const { pacer, clock } = pacerWith({ store });
		const first = (await take(pacer))!;
		await pacer.rateLimited(first, null, null);
		const learnt = (await store.read('openai:test')).learnt;
		clock.now += 10;
		// Another call that went before the cut says nothing new.
		await pacer.rateLimited(first, null, null);
		expect((await store.read('openai:test')).learnt).toEqual(learnt);
	});

	it('acquire takes a slot no more than 200 ms ahead: a cut of the rate meanwhile applies to the calls still waiting', async () => {
		const store = createMemoryPacingStore();
		let reservations = 0;
		const counting: PacingStore = { ...store, reserve: (...args) => (reservations++, store.reserve(...args)) };
		const { pacer } = pacerWith({ store: counting, configured: { requestsPerMinute: 6, tokensPerMinute: null } });
		expect(await sentTimes(pacer, 2)).toEqual([0, 10_000]);
		// The second call asked once too early (10 s ahead), then once 200 ms before its slot.
		expect(reservations).toBe(3);
	});

	it('two instances on one store share the budget: their calls get one schedule', async () => {
		const store = createMemoryPacingStore();
		const clock = { now: T0 };
		const configured = { requestsPerMinute: 240, tokensPerMinute: null };
		const one = pacerWith({ store, clock, configured });
		const other = pacerWith({ store, clock, configured });
		const times = [];
		for (let i = 0; i < 3; i++) times.push((await take(one.pacer))!.sentAt - T0, (await take(other.pacer))!.sentAt - T0);
		expect(times).toEqual([0, 0, 0, 100, 350, 600]);
	});

	it('acquire paces alone, from memory, while the shared store fails, and says so once', async () => {
		const failing: PacingStore = {
			reserve: async () => Promise.reject(new Error('connection refused')),
			hold: async () => Promise.reject(new Error('connection refused')),
			read: async () => Promise.reject(new Error('connection refused')),
			learn: async () => Promise.reject(new Error('connection refused')),
		};
		const { pacer, logger } = pacerWith({ store: failing, configured: { requestsPerMinute: 60, tokensPerMinute: null } });
		expect(await sentTimes(pacer, 3)).toEqual([0, 1000, 2000]);
		expect(logger.lines.filter((line) => line.level === 'warn')).toHaveLength(1);
		expect(JSON.stringify(logger.lines)).not.toContain('sk-');
	});

	it('acquire rejects with the signal\'s reason when the call is aborted while it waits', async () => {
		const { pacer } = pacerWith({ configured: { requestsPerMinute: 1, tokensPerMinute: null } });
		await take(pacer);
		const controller = new AbortController();
		controller.abort(new Error('shutting down'));
		await expect(pacer.acquire({ tokens: 1, maxWaitMs: 120_000, signal: controller.signal })).rejects.toThrow('shutting down');
	});

	it('acquire counts the calls that waited, and their waits, by provider', async () => {
		const before = await metric('pseo_provider_paced_calls_total', 'anthropic');
		const { pacer } = pacerWith({ provider: 'anthropic', configured: { requestsPerMinute: 60, tokensPerMinute: null } });
		for (let i = 0; i < 3; i++) await take(pacer);
		expect((await metric('pseo_provider_paced_calls_total', 'anthropic')) - before).toBe(2);
	});
});
