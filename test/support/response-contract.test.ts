import { describe, expect, it } from 'vitest';
import { checkResponse } from './response-contract.ts';

const BASE = 'http://127.0.0.1:8055';
const JSON_TYPE = 'application/json; charset=utf-8';
const timestamp = '2026-01-31T09:30:00.000Z';
const envelope = (code: string) => ({ success: false, error: 'Something went wrong.', code, timestamp });
const job = {
	id: 3,
	pseo_id: 1,
	kind: 'bulk',
	status: 'running',
	requested_count: 2,
	created_count: 1,
	failed_count: 0,
	failed_routes: [],
	date_created: timestamp,
	date_updated: timestamp,
	date_completed: null,
	last_error: null,
	attention: false,
	provider: 'openai',
	model: 'gpt-5.4-mini',
	usage: { prompt_tokens: 0, completion_tokens: 0, requests: 0 },
};

describe('checkResponse', () => {
	it('accepts a body that matches its route and status', () => {
		expect(() => checkResponse('GET', `${BASE}/pseo-endpoints/generations/3`, 200, JSON_TYPE, { success: true, data: job, timestamp })).not.toThrow();
		expect(() => checkResponse('GET', `${BASE}/pseo-endpoints/generations?pseo_id=1`, 403, JSON_TYPE, envelope('PSEO_FORBIDDEN'))).not.toThrow();
	});

	it('throws with the route, the status, the errors and the body when a field drifts', () => {
		const drifted = { success: true, data: { ...job, failed_routes: ['/a'] }, timestamp };
		expect(() => checkResponse('GET', `${BASE}/pseo-endpoints/generations/3`, 200, JSON_TYPE, drifted)).toThrow(
			/GET \/pseo-endpoints\/generations\/3 -> 200 \(GET \/generations\/\{id\}, response 200\)[\s\S]*failed_routes\/0 must be object[\s\S]*body: .*"\/a"/,
		);
	});

	it('throws on a field the document does not know, or one it requires that is missing', () => {
		const extra = { success: true, data: { ...job, user_id: 'x' }, timestamp };
		expect(() => checkResponse('GET', `${BASE}/pseo-endpoints/generations/3`, 200, JSON_TYPE, extra)).toThrow(/must NOT have additional properties/);
		const { date_updated: _, ...missing } = job;
		expect(() => checkResponse('GET', `${BASE}/pseo-endpoints/generations/3`, 200, JSON_TYPE, { success: true, data: missing, timestamp })).toThrow(
			/must have required property 'date_updated'/,
		);
	});

	it('throws on a status the route does not document', () => {
		expect(() => checkResponse('GET', `${BASE}/pseo-endpoints/generations/3`, 402, JSON_TYPE, envelope('PSEO_INSUFFICIENT_TOKENS'))).toThrow(
			/status 402 is not documented for GET \/generations\/\{id\}/,
		);
	});

	it('throws on an error that is not the envelope, or not JSON', () => {
		expect(() => checkResponse('POST', `${BASE}/pseo-endpoints/pseo`, 401, JSON_TYPE, { errors: [{ message: 'Invalid user credentials.' }] })).toThrow(
			/must have required property 'success'/,
		);
		expect(() => checkResponse('POST', `${BASE}/pseo-endpoints/pseo`, 400, 'text/html', '<h1>Bad</h1>')).toThrow(/content-type text\/html/);
	});

	it('an unknown path under the endpoint must answer the error envelope', () => {
		expect(() => checkResponse('GET', `${BASE}/pseo-endpoints/does-not-exist`, 404, JSON_TYPE, envelope('PSEO_NOT_FOUND'))).not.toThrow();
		expect(() => checkResponse('DELETE', `${BASE}/pseo-endpoints/pseo`, 404, JSON_TYPE, envelope('PSEO_NOT_FOUND'))).not.toThrow();
		expect(() => checkResponse('GET', `${BASE}/pseo-endpoints/does-not-exist`, 200, JSON_TYPE, {})).toThrow(/no operation/);
		expect(() => checkResponse('GET', `${BASE}/pseo-endpoints/does-not-exist`, 404, JSON_TYPE, 'Cannot GET')).toThrow(/does not match/);
	});

	it('matches the endpoint root with or without its slash, and leaves other paths alone', () => {
		const health = { success: true, status: 'ok', extension: 'pseo-automation', version: '0.1.0', endpoints: ['GET /'], timestamp };
		expect(() => checkResponse('GET', `${BASE}/pseo-endpoints/`, 200, JSON_TYPE, health)).not.toThrow();
		expect(() => checkResponse('GET', `${BASE}/pseo-endpoints`, 200, JSON_TYPE, health)).not.toThrow();
		expect(() => checkResponse('GET', `${BASE}/pseo-endpoints/`, 200, JSON_TYPE, { ...health, status: 'degraded' })).toThrow();
		expect(() => checkResponse('GET', `${BASE}/items/pseo`, 200, JSON_TYPE, { data: [] })).not.toThrow();
		expect(() => checkResponse('GET', `${BASE}/pseo-endpoints-other/x`, 200, JSON_TYPE, 'anything')).not.toThrow();
	});
});
