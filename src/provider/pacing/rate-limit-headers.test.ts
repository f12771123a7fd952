import { describe, expect, it } from 'vitest';
import { goDurationMs, readRateLimitHeaders } from './rate-limit-headers.ts';

const NOW = Date.parse('2026-03-01T12:00:00.000Z');

describe('readRateLimitHeaders', () => {
	it('reads OpenAI\'s six headers, with resets written as Go durations', () => {
		const headers = new Headers({
			'x-ratelimit-limit-requests': '60',
			'x-ratelimit-remaining-requests': '59',
			'x-ratelimit-reset-requests': '1s',
			'x-ratelimit-limit-tokens': '150000',
			'x-ratelimit-remaining-tokens': '149984',
			'x-ratelimit-reset-tokens': '6m0s',
		});
		expect(readRateLimitHeaders(headers, NOW)).toEqual({
			requests: { limit: 60, remaining: 59, resetMs: 1000 },
			tokens: { limit: 150_000, remaining: 149_984, resetMs: 360_000 },
		});
	});

	it('reads Anthropic\'s request and input-token headers, with resets written as RFC 3339 times', () => {
		const headers = new Headers({
			'anthropic-ratelimit-requests-limit': '50',
			'anthropic-ratelimit-requests-remaining': '49',
			'anthropic-ratelimit-requests-reset': '2026-03-01T12:00:01.200Z',
			'anthropic-ratelimit-input-tokens-limit': '30000',
			'anthropic-ratelimit-input-tokens-remaining': '29000',
			'anthropic-ratelimit-input-tokens-reset': '2026-03-01T12:00:02Z',
			// Input and output together: not the limit an input estimate is paced to.
			'anthropic-ratelimit-tokens-limit': '38000',
		});
		expect(readRateLimitHeaders(headers, NOW)).toEqual({
			requests: { limit: 50, remaining: 49, resetMs: 1200 },
			tokens: { limit: 30_000, remaining: 29_000, resetMs: 2000 },
		});
	});

	it('states nothing for an answer without limit headers (Gemini), nor for Azure\'s 0 and -1 limits', () => {
		expect(readRateLimitHeaders(new Headers({ 'content-type': 'application/json' }), NOW)).toBeNull();
		expect(readRateLimitHeaders(new Headers({ 'x-ratelimit-limit-requests': '0', 'x-ratelimit-limit-tokens': '-1' }), NOW)).toBeNull();
		expect(readRateLimitHeaders(null, NOW)).toBeNull();
	});

	it('takes an unreadable remaining or reset for absent, and keeps the limit', () => {
		const headers = new Headers({ 'x-ratelimit-limit-requests': '10', 'x-ratelimit-remaining-requests': 'many', 'x-ratelimit-reset-requests': 'soon' });
		expect(readRateLimitHeaders(headers, NOW)).toEqual({ requests: { limit: 10, remaining: null, resetMs: null }, tokens: null });
	});

	it('reads a reset time already past as 0', () => {
		const headers = new Headers({ 'anthropic-ratelimit-requests-limit': '5', 'anthropic-ratelimit-requests-reset': '2026-03-01T11:59:00Z' });
		expect(readRateLimitHeaders(headers, NOW)?.requests?.resetMs).toBe(0);
	});
});

describe('goDurationMs', () => {
	it.each([
		['1s', 1000],
		['6m0s', 360_000],
		['12ms', 12],
		['1h2m3.5s', 3_723_500],
		['250us', 0.25],
		['0', 0],
	])('reads %s as %d ms', (text, ms) => {
		expect(goDurationMs(text)).toBeCloseTo(ms, 6);
	});

	it.each(['', '1', 's', '1 s', '1d', '-1s'])('refuses %j', (text) => {
		expect(goDurationMs(text)).toBeNull();
	});
});
