import { describe, expect, it } from 'vitest';
import * as conflict from './conflict.ts';
import * as forbidden from './forbidden.ts';
import * as idempotency from './idempotency.ts';
import * as metricsAccess from './metrics-access.ts';
import * as insufficientTokens from './insufficient-tokens.ts';
import * as invalidPayload from './invalid-payload.ts';
import * as notFound from './not-found.ts';
import * as providerUnavailable from './provider-unavailable.ts';
import { UnauthorizedError } from './unauthorized.ts';

describe('error messages', () => {
	it('ConflictError says why', () => {
		expect(conflict.messageConstructor({ reason: 'PSEO 3 already has a job.' })).toBe('PSEO 3 already has a job.');
		expect(new conflict.ConflictError({ reason: 'x' })).toMatchObject({ status: 409, code: 'PSEO_CONFLICT', message: 'x' });
	});

	it('ForbiddenError names the resource and its id', () => {
		expect(forbidden.messageConstructor({ resource: 'PSEO record', id: 7 })).toBe('You do not own PSEO record 7.');
		expect(new forbidden.ForbiddenError({ resource: 'Generation', id: 2 }).status).toBe(403);
	});

	it('InsufficientTokensError gives the price and the balance', () => {
		expect(insufficientTokens.messageConstructor({ required: 20, balance: 5 })).toBe(
			'Insufficient token balance: this operation costs 20 tokens and the balance is 5.',
		);
		expect(new insufficientTokens.InsufficientTokensError({ required: 1, balance: 0 }).status).toBe(402);
	});

	it('InvalidPayloadError says what is wrong', () => {
		expect(invalidPayload.messageConstructor({ reason: '"pseo_id" is required.' })).toBe('"pseo_id" is required.');
		expect(new invalidPayload.InvalidPayloadError({ reason: 'x' }).status).toBe(400);
	});

	it('NotFoundError names the resource and its id', () => {
		expect(notFound.messageConstructor({ resource: 'Generation', id: 9 })).toBe('Generation 9 does not exist.');
		expect(new notFound.NotFoundError({ resource: 'Route', id: 'GET /x' }).status).toBe(404);
	});

	it('ProviderUnavailableError carries the provider\'s reason', () => {
		expect(providerUnavailable.messageConstructor({ reason: 'timeout.' })).toBe('The AI provider could not complete the request: timeout.');
		expect(new providerUnavailable.ProviderUnavailableError({ reason: 'x' }).status).toBe(502);
	});

	it('the Idempotency-Key errors name the key and say what to do', () => {
		expect(idempotency.reusedMessage({ key: 'k-1' })).toBe('Idempotency-Key "k-1" was already used for a request with another body on this route; send a new key for a new request.');
		expect(new idempotency.IdempotencyKeyReusedError({ key: 'k' })).toMatchObject({ status: 422, code: 'PSEO_IDEMPOTENCY_KEY_REUSED' });
		expect(idempotency.inUseMessage({ key: 'k-1' })).toContain('still being processed');
		expect(new idempotency.IdempotencyKeyInUseError({ key: 'k' })).toMatchObject({ status: 409, code: 'PSEO_IDEMPOTENCY_KEY_IN_USE' });
	});

	it('MetricsAccessError says who may read the metrics', () => {
		expect(metricsAccess.messageConstructor()).toBe('Only admins, and the user whose static token is PSEO_METRICS_TOKEN, may read the metrics.');
		expect(new metricsAccess.MetricsAccessError()).toMatchObject({ status: 403, code: 'PSEO_FORBIDDEN' });
	});

	it('UnauthorizedError asks for a Bearer token', () => {
		expect(new UnauthorizedError()).toMatchObject({ status: 401, message: 'Authentication required: send a valid Bearer token.' });
	});
});
