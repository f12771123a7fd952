import * as Anthropic from '@anthropic-ai/sdk';
import { APIConnectionError, APIConnectionTimeoutError, APIError, APIUserAbortError } from 'openai';
import { describe, expect, it } from 'vitest';
import { ProviderCallError, isProviderCallError } from './provider-call-error.ts';
import { classifyError, describeFailure, rateWaitError, redact, toCallError, type SdkErrorClasses } from './provider-failure.ts';

const apiError = (status: number, message = 'boom', headers: Record<string, string> = {}) =>
	APIError.generate(status, { error: { message } }, undefined, new Headers(headers));

describe('classifyError', () => {
	it('retries rate limits, request timeouts, conflicts, server errors, timeouts and connection errors', () => {
		expect(classifyError(apiError(429))).toMatchObject({ reason: 'rate_limited', retryable: true, status: 429 });
		expect(classifyError(apiError(408))).toMatchObject({ reason: 'timeout', retryable: true });
		expect(classifyError(apiError(409))).toMatchObject({ reason: 'server_error', retryable: true });
		expect(classifyError(apiError(502))).toMatchObject({ reason: 'server_error', retryable: true, status: 502, detail: 'boom' });
		expect(classifyError(new APIConnectionTimeoutError())).toEqual({ reason: 'timeout', retryable: true });
		expect(classifyError(new APIConnectionError({ message: 'ECONNRESET' }))).toEqual({ reason: 'connection', retryable: true });
		expect(classifyError(new TypeError('terminated'))).toEqual({ reason: 'connection', retryable: true });
	});

	it('does not retry 400, 401, 403, 404, 422 or an abort', () => {
		expect(classifyError(apiError(400))).toMatchObject({ reason: 'bad_request', retryable: false });
		expect(classifyError(apiError(401, 'Incorrect API key provided: sk-abc'))).toEqual({ reason: 'unauthorized', retryable: false, status: 401 });
		expect(classifyError(apiError(403))).toMatchObject({ reason: 'forbidden', retryable: false });
		expect(classifyError(apiError(404))).toMatchObject({ reason: 'not_found', retryable: false });
		expect(classifyError(apiError(422))).toMatchObject({ reason: 'bad_request', retryable: false });
		expect(classifyError(new APIUserAbortError())).toEqual({ reason: 'aborted', retryable: false });
	});

	it('tells a spent quota from a rate limit: OpenAI\'s insufficient_quota and Anthropic\'s spend limit are not retried', () => {
		const openai = APIError.generate(429, { error: { message: 'You exceeded your current quota, please check your plan and billing details.', type: 'insufficient_quota', code: 'insufficient_quota' } }, undefined, new Headers({ 'x-should-retry': 'true' }));
		expect(classifyError(openai)).toEqual({ reason: 'quota_exhausted', retryable: false, status: 429, detail: 'You exceeded your current quota, please check your plan and billing details.' });
		const sdk: SdkErrorClasses = {
			APIUserAbortError: Anthropic.APIUserAbortError,
			APIConnectionTimeoutError: Anthropic.APIConnectionTimeoutError,
			APIConnectionError: Anthropic.APIConnectionError,
			APIError: Anthropic.APIError as unknown as SdkErrorClasses['APIError'],
		};
		const body = { type: 'error', error: { type: 'rate_limit_error', message: 'Spend limit reached', details: { error_code: 'enforced_spend_limit_reached' } } };
		expect(classifyError(Anthropic.APIError.generate(429, body, undefined, new Headers()), [], sdk)).toMatchObject({ reason: 'quota_exhausted', retryable: false, status: 429 });
		const rate = { type: 'error', error: { type: 'rate_limit_error', message: 'Rate limited' } };
		expect(classifyError(Anthropic.APIError.generate(429, rate, undefined, new Headers()), [], sdk)).toMatchObject({ reason: 'rate_limited', retryable: true });
		expect(classifyError(APIError.generate(429, { error: { message: 'Rate limit reached', type: 'requests', code: 'rate_limit_exceeded' } }, undefined, new Headers()))).toMatchObject({ reason: 'rate_limited', retryable: true });
	});

	it('obeys an explicit x-should-retry header', () => {
		expect(classifyError(apiError(500, 'x', { 'x-should-retry': 'false' })).retryable).toBe(false);
		expect(classifyError(apiError(400, 'x', { 'x-should-retry': 'true' })).retryable).toBe(true);
	});
});

describe('redact', () => {
	it('masks keys, bearer tokens and given secrets, flattens and truncates', () => {
		expect(redact('key sk-proj-AbC123xyz789 used', [])).toBe('key [redacted] used');
		expect(redact('API key AIzaSyA1b2C3d4E5f6G7h8I9j0KlMnOpQrStUv not valid', [])).toBe('API key [redacted] not valid');
		expect(redact('Authorization: Bearer abc.def', [])).toBe('Authorization: Bearer [redacted]');
		expect(redact('token my-own-secret here', ['my-own-secret'])).toBe('token [redacted] here');
		expect(redact('a\n\n  b')).toBe('a b');
		const long = redact('x'.repeat(500));
		expect(long.length).toBe(200);
		expect(long.endsWith('…')).toBe(true);
	});
});

describe('describeFailure and toCallError', () => {
	it('write one short sentence with status, attempts and detail', () => {
		expect(describeFailure({ reason: 'rate_limited', retryable: true, status: 429 }, 4)).toBe('Provider rate limit (HTTP 429) after 4 attempts');
		expect(describeFailure({ reason: 'invalid_output', retryable: true, detail: 'title is empty' }, 1)).toBe('Provider output failed validation: title is empty');
		const error = toCallError({ reason: 'bad_request', retryable: false, status: 400, detail: 'bad schema' }, 1);
		expect(error).toBeInstanceOf(ProviderCallError);
		expect(isProviderCallError(error)).toBe(true);
		expect(isProviderCallError(new Error('x'))).toBe(false);
		expect(error).toMatchObject({ name: 'ProviderCallError', reason: 'bad_request', retryable: false, status: 400, attempts: 1 });
		expect(error.message).toBe('Provider rejected the request (HTTP 400): bad schema');
		expect(describeFailure({ reason: 'quota_exhausted', retryable: false, status: 429, detail: 'You exceeded your current quota' }, 1)).toBe(
			'Provider quota or spending limit reached (add credit or raise the limit at the provider) (HTTP 429): You exceeded your current quota',
		);
	});

	it('rateWaitError says that the call was handed back for its rate limit, retryable', () => {
		const error = rateWaitError({ reason: 'rate_limited', retryable: true, status: 429, detail: 'slow down' }, 9, 300_000);
		expect(error).toMatchObject({ name: 'ProviderCallError', reason: 'rate_limited', retryable: true, status: 429, attempts: 9 });
		expect(error.message).toBe('Provider rate limit (HTTP 429): still limited after waiting 300 s (PSEO_PROVIDER_RATE_WAIT_MS) and 9 attempts: slow down');
		expect(rateWaitError(null, 0, 60_000).message).toBe('Provider rate limit: no request slot within 60 s (PSEO_PROVIDER_RATE_WAIT_MS)');
	});
});
