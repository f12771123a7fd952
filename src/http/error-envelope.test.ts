import { describe, expect, it } from 'vitest';
import { ForbiddenError, InvalidPayloadError } from '../errors/index.ts';
import { rewriteDirectusErrors, statusFor, toErrorResponse } from './error-envelope.ts';

const directusError = (status: number, code: string, message = 'm') => ({ errors: [{ message, extensions: { code } }] });

describe('statusFor', () => {
	it.each(['INVALID_TOKEN', 'TOKEN_EXPIRED', 'INVALID_CREDENTIALS'])('answers 401 for the token failure %s', (code) => {
		expect(statusFor(403, code)).toBe(401);
		expect(statusFor(401, code)).toBe(401);
	});

	it('keeps the status of every other error', () => {
		expect(statusFor(403, 'FORBIDDEN')).toBe(403);
		expect(statusFor(400, 'INVALID_PAYLOAD')).toBe(400);
	});
});

describe('rewriteDirectusErrors', () => {
	it('turns a Directus 403 INVALID_TOKEN body into a 401 envelope with a token message', () => {
		const body = rewriteDirectusErrors(403, directusError(403, 'INVALID_TOKEN', 'Invalid token.')) as Record<string, unknown>;
		expect(body).toMatchObject({ success: false, code: 'INVALID_TOKEN', error: 'Invalid or expired Bearer token.' });
		expect(body['timestamp']).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
	});

	it('keeps the message of a non-token error', () => {
		expect(rewriteDirectusErrors(400, directusError(400, 'INVALID_PAYLOAD', 'Bad JSON'))).toMatchObject({ error: 'Bad JSON', code: 'INVALID_PAYLOAD' });
	});

	it('leaves success bodies and bodies without errors alone', () => {
		const ok = { data: 1 };
		expect(rewriteDirectusErrors(200, ok)).toBe(ok);
		expect(rewriteDirectusErrors(500, { message: 'x' })).toEqual({ message: 'x' });
	});
});

describe('toErrorResponse', () => {
	it('answers a named error with its own status and code', () => {
		expect(toErrorResponse(new InvalidPayloadError({ reason: 'no' }))).toMatchObject({ status: 400, body: { error: 'no', code: 'PSEO_INVALID_PAYLOAD' } });
		expect(toErrorResponse(new ForbiddenError({ resource: 'PSEO', id: 3 })).status).toBe(403);
	});

	it('answers a thrown Directus token error as 401', () => {
		const error = Object.assign(new Error('Invalid token.'), { status: 403, code: 'INVALID_TOKEN' });
		expect(toErrorResponse(error).status).toBe(401);
	});

	it('answers anything else as a 500 that leaks nothing', () => {
		const { status, body } = toErrorResponse(new Error('password=hunter2'));
		expect(status).toBe(500);
		expect(JSON.stringify(body)).not.toContain('hunter2');
	});
});
