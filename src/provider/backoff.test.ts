import { describe, expect, it } from 'vitest';
import { assertBackoff, backoffDelay, defaultSleep, retryAfterMs } from './backoff.ts';

describe('backoffDelay', () => {
	it('doubles from baseMs per attempt, caps at maxMs, and jitters between half and all of it', () => {
		const backoff = { baseMs: 100, maxMs: 1000 };
		expect([1, 2, 3, 4, 5, 6].map((attempt) => backoffDelay(attempt, backoff, () => 1))).toEqual([100, 200, 400, 800, 1000, 1000]);
		expect([1, 2, 3, 4, 5, 6].map((attempt) => backoffDelay(attempt, backoff, () => 0))).toEqual([50, 100, 200, 400, 500, 500]);
		for (let i = 0; i < 100; i++) {
			const delay = backoffDelay(3, backoff);
			expect(delay).toBeGreaterThanOrEqual(200);
			expect(delay).toBeLessThanOrEqual(400);
		}
	});
});

describe('retryAfterMs', () => {
	const headers = (init: Record<string, string>) => new Headers(init);

	it('prefers retry-after-ms, then retry-after in seconds', () => {
		expect(retryAfterMs(headers({ 'retry-after-ms': '1500', 'retry-after': '9' }), 60_000)).toBe(1500);
		expect(retryAfterMs(headers({ 'retry-after': '2' }), 60_000)).toBe(2000);
		expect(retryAfterMs(headers({ 'retry-after': '0.5' }), 60_000)).toBe(500);
	});

	it('reads an HTTP date relative to now, never negative', () => {
		const now = Date.parse('2025-01-01T00:00:00Z');
		expect(retryAfterMs(headers({ 'retry-after': 'Wed, 01 Jan 2025 00:00:03 GMT' }), 60_000, now)).toBe(3000);
		expect(retryAfterMs(headers({ 'retry-after': 'Tue, 31 Dec 2024 23:59:00 GMT' }), 60_000, now)).toBe(0);
	});

	it('caps the wait and ignores absent or unusable values', () => {
		expect(retryAfterMs(headers({ 'retry-after': '3600' }), 5000)).toBe(5000);
		expect(retryAfterMs(headers({}), 5000)).toBeNull();
		expect(retryAfterMs(headers({ 'retry-after': 'soon' }), 5000)).toBeNull();
		expect(retryAfterMs(undefined, 5000)).toBeNull();
	});
});

describe('defaultSleep', () => {
	it('resolves after the delay', async () => {
		const started = Date.now();
		await defaultSleep(30);
		expect(Date.now() - started).toBeGreaterThanOrEqual(25);
	});

	it('rejects at once when the signal aborts', async () => {
		const controller = new AbortController();
		const started = Date.now();
		const sleeping = defaultSleep(10_000, controller.signal);
		controller.abort(new Error('stop'));
		await expect(sleeping).rejects.toThrow('stop');
		expect(Date.now() - started).toBeLessThan(1000);
		await expect(defaultSleep(10, controller.signal)).rejects.toThrow('stop');
	});
});

describe('assertBackoff', () => {
	it('names the bad field', () => {
		expect(() => assertBackoff({ baseMs: -1, maxMs: 10 })).toThrow('Expected `backoff.baseMs` to be a finite number >= 0, got `-1` (number)');
		expect(() => assertBackoff({ baseMs: 10, maxMs: 5 })).toThrow('Expected `backoff.maxMs` to be a finite number >= baseMs (10), got `5` (number)');
		expect(() => assertBackoff(null)).toThrow(TypeError);
		expect(() => assertBackoff({ baseMs: 0, maxMs: 0 })).not.toThrow();
	});
});
