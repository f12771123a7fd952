import type { Request } from 'express';
import { describe, expect, it } from 'vitest';
import { getGenerationRoute, listGenerationsRoute, onDemandGenerationRoute, regeneratePostRoute } from '../contracts/generations.ts';
import { rejectionReason } from '../../test/support/rejection-reason.ts';
import { parseRequest } from './parse-request.ts';

const request = (parts: Partial<Pick<Request, 'params' | 'query' | 'body'>>) => ({ params: {}, query: {}, ...parts }) as Request;

const reasonOf = rejectionReason;

describe('parseRequest', () => {
	it('returns the path, query and body as the contract gives them', () => {
		expect(parseRequest(getGenerationRoute, request({ params: { id: '42' } })).params).toEqual({ id: 42 });
		expect(parseRequest(listGenerationsRoute, request({ query: { pseo_id: '7', other: 'x' } })).query).toEqual({ pseo_id: 7 });
		const { params, body } = parseRequest(regeneratePostRoute, request({ params: { id: '3' }, body: { instructions: '  Shorter.  ' } }));
		expect([params.id, body.instructions]).toEqual([3, 'Shorter.']);
	});

	it('operating contract 4: path and query ids are plain positive integers of at most 2147483647, given once', () => {
		for (const bad of ['abc', '0', '-1', '1.5', '1e3', '01', ' 1', '99999999999999999999']) {
			expect(reasonOf(() => parseRequest(getGenerationRoute, request({ params: { id: bad } })))).toBe('"id" must be a positive integer.');
		}
		expect(reasonOf(() => parseRequest(getGenerationRoute, request({ params: { id: '2147483648' } })))).toBe('"id" must be at most 2147483647.');
		expect(parseRequest(getGenerationRoute, request({ params: { id: '2147483647' } })).params.id).toBe(2147483647);
		expect(reasonOf(() => parseRequest(listGenerationsRoute, request({ query: { pseo_id: ['1', '1'] } })))).toBe('"pseo_id" must be a positive integer.');
		for (const query of [{}, { pseo_id: '' }]) {
			expect(reasonOf(() => parseRequest(listGenerationsRoute, request({ query })))).toBe('Query or path parameter "pseo_id" is required.');
		}
	});

	it('4.4 names the field and the rule, with the value received', () => {
		const reason = (body: unknown) => reasonOf(() => parseRequest(onDemandGenerationRoute, request({ body })));
		expect(reason({ pseo_id: 1, post_count: 'abc' })).toBe('"post_count" must be a positive integer, received "abc".');
		expect(reason({ pseo_id: 1, post_count: [1] })).toBe('"post_count" must be a positive integer, received an array.');
		expect(reason({ pseo_id: 1, post_count: 1.5 })).toBe('"post_count" must be a positive integer, received 1.5.');
		expect(reason({ pseo_id: 1, post_count: 0 })).toBe('"post_count" must be a positive integer, received 0.');
		expect(reason({ pseo_id: 1, post_count: 2 })).toBe('"post_count" must be 1 for on-demand generation (test mode).');
		expect(reason({ pseo_id: 1 })).toBe('"post_count" is required.');
		expect(reason({ pseo_id: 3_000_000_000, post_count: 1 })).toBe('"pseo_id" must be at most 2147483647, received 3000000000.');
		for (const body of [undefined, null, [1], 'x']) expect(reason(body)).toBe('The request body must be a JSON object.');
		expect(parseRequest(onDemandGenerationRoute, request({ body: { pseo_id: 1, post_count: 1, note: 'ignored' } })).body).toEqual({ pseo_id: 1, post_count: 1 });
	});

	it('reports an unknown field before the rules of the fields it knows', () => {
		const reason = reasonOf(() => parseRequest(regeneratePostRoute, request({ params: { id: '1' }, body: { instructions: 7, tone: 'dry' } })));
		expect(reason).toBe('Unknown field(s): tone. Only "instructions" is accepted.');
	});

	it('regenerate takes no body, an empty one, or instructions of at most 2000 characters, trimmed', () => {
		const body = (value: unknown) => parseRequest(regeneratePostRoute, request({ params: { id: '1' }, body: value })).body;
		for (const empty of [undefined, null, {}, { instructions: null }, { instructions: '   ' }]) expect(body(empty)).toEqual({ instructions: null });
		expect(body({ instructions: '😀'.repeat(2000) }).instructions).toHaveLength(4000);
		expect(reasonOf(() => body({ instructions: 'a'.repeat(2001) }))).toBe('"instructions" must be at most 2000 characters (received 2001).');
		expect(reasonOf(() => body({ instructions: 5 }))).toBe('"instructions" must be a string.');
		expect(reasonOf(() => body([1]))).toBe('The request body must be a JSON object.');
	});
});
