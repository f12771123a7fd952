import { ApiError } from '@google/genai';
import { describe, expect, it } from 'vitest';
import { classifyGoogleError } from './google-failure.ts';

describe('classifyGoogleError', () => {
	it('fails at once on an argument the SDK refuses before any network use', () => {
		expect(classifyGoogleError(new Error('Invalid batch job name: x.'), [], false, 1000)).toEqual({ reason: 'bad_request', retryable: false, detail: 'Invalid batch job name: x.' });
	});

	it('retries a network failure, whatever shape it arrives in', () => {
		expect(classifyGoogleError(new TypeError('fetch failed'), [], false, 1000)).toEqual({ reason: 'connection', retryable: true });
		expect(classifyGoogleError(new Error('socket hang up', { cause: { code: 'ECONNRESET' } }), [], false, 1000)).toEqual({ reason: 'connection', retryable: true });
		expect(classifyGoogleError(Object.assign(new Error('aborted'), { name: 'AbortError' }), [], false, 1000)).toEqual({ reason: 'timeout', retryable: true });
	});

	it('reads the status and the wait of an API error, and the caller\'s abort first', () => {
		const body = JSON.stringify({ error: { code: 429, message: 'Resource has been exhausted', details: [{ '@type': 'type.googleapis.com/google.rpc.RetryInfo', retryDelay: '7s' }] } });
		expect(classifyGoogleError(new ApiError({ message: body, status: 429 }), [], false, 5000)).toMatchObject({ reason: 'rate_limited', retryable: true, status: 429, retryAfterMs: 5000 });
		expect(classifyGoogleError(new ApiError({ message: body, status: 429 }), [], true, 5000)).toEqual({ reason: 'aborted', retryable: false });
	});
});
