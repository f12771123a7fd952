import type { Request } from 'express';
import { describe, expect, it } from 'vitest';
import { rejectionReason } from '../../test/support/rejection-reason.ts';
import { parseRequest } from '../http/parse-request.ts';
import { codePointLength } from './field-rules.ts';
import { generateContentPlanRoute, importContentPlanRoute } from './plans.ts';

const DESCRIPTION = 'We repair and service gas boilers in Istanbul for households and small offices; we want more bookings. '.repeat(2);

function body(overrides: Record<string, unknown> = {}): Record<string, unknown> {
	return { pseo_id: 7, language_code: 'en-US', description: DESCRIPTION, ...overrides };
}

/** The body of POST /generate/main-json as the route gets it once validated. */
const parsePlanRequest = (body: unknown) => parseRequest(generateContentPlanRoute, { body } as Request).body;

/** The 400's message, failing the test when the call does not throw an InvalidPayloadError. */
const reasonOf = (input: unknown, parse: (body: unknown) => unknown = parsePlanRequest): string => rejectionReason(() => parse(input));

describe('POST /generate/main-json contract', () => {
	it('4.8 returns the parsed fields of a valid body', () => {
		expect(parsePlanRequest(body())).toEqual({ pseoId: 7, languageCode: 'en-US', description: DESCRIPTION.trim() });
	});

	it.each([[null], ['text'], [[1, 2]], [42]])('4.8 rejects a body that is not an object: %j', (input) => {
		expect(reasonOf(input)).toMatch(/JSON object/);
	});

	it('4.8 rejects unknown fields, naming them', () => {
		expect(reasonOf(body({ pages: 10 }))).toMatch(/Unknown field\(s\): pages/);
	});

	describe('pseo_id', () => {
		it('is required', () => {
			expect(reasonOf(body({ pseo_id: undefined }))).toMatch(/"pseo_id" is required/);
		});

		it.each([['7'], [true], [[7]], [{ id: 7 }]])('must be a JSON number, not %j', (value) => {
			expect(reasonOf(body({ pseo_id: value }))).toMatch(/"pseo_id" must be a positive integer, received (".*"|true|an array|an object)\./);
		});

		it.each([[0], [-3], [1.5], [Number.NaN], [Number.MAX_SAFE_INTEGER + 1]])('must be a positive safe integer, not %j', (value) => {
			expect(reasonOf(body({ pseo_id: value }))).toMatch(/"pseo_id" must be a positive integer/);
		});

		it('must fit the 32-bit integer ids of PostgreSQL and MySQL', () => {
			expect(reasonOf(body({ pseo_id: 2_147_483_648 }))).toBe('"pseo_id" must be at most 2147483647, received 2147483648.');
			expect(() => parsePlanRequest(body({ pseo_id: 2_147_483_647 }))).not.toThrow();
		});
	});

	describe('language_code', () => {
		it.each([
			['en-US', 'en-US'],
			['tr-TR', 'tr-TR'],
			['de-DE', 'de-DE'],
			['en-us', 'en-US'],
			['EN_us', 'en-US'],
			[' tr-tr ', 'tr-TR'],
			['tr', 'tr'],
			['zh-hant-tw', 'zh-Hant-TW'],
			['es-419', 'es-419'],
			['sr-Latn-RS', 'sr-Latn-RS'],
			['iw-IL', 'he-IL'],
		])('accepts %j as %j', (value, expected) => {
			expect(parsePlanRequest(body({ language_code: value })).languageCode).toBe(expected);
		});

		it.each([
			['english'],
			['English (US)'],
			['en US'],
			['en-'],
			[''],
			['xx-XX'],
			['und'],
			['en-ZZ'],
			['en-AA'],
			['de-DE-1996'],
			['en-US-u-ca-buddhist'],
			['x-private'],
			['e'],
		])('rejects %j', (value) => {
			expect(reasonOf(body({ language_code: value }))).toMatch(/"language_code" must be a locale such as en-US/);
		});

		it('rejects a non-string and a missing value with their own message', () => {
			expect(reasonOf(body({ language_code: 1033 }))).toMatch(/"language_code" must be a string, received a number/);
			expect(reasonOf(body({ language_code: null }))).toMatch(/"language_code" is required/);
		});
	});

	describe('description', () => {
		it.each([
			['ASCII', 'a'],
			['Turkish', 'ş'],
			['emoji (2 UTF-16 units each)', '😀'],
			['CJK', '漢'],
		])('4.8 counts %s characters as code points at the 149/150/1000/1001 edges', (_name, char) => {
			expect(reasonOf(body({ description: char.repeat(149) }))).toMatch(/150 to 1000 characters .* received 149/);
			expect(parsePlanRequest(body({ description: char.repeat(150) })).description).toBe(char.repeat(150));
			expect(parsePlanRequest(body({ description: char.repeat(1000) })).description).toBe(char.repeat(1000));
			expect(reasonOf(body({ description: char.repeat(1001) }))).toMatch(/received 1001/);
		});

		it('accepts 150 emoji although they are 300 UTF-16 units, and refuses 501 emoji of 1002 units', () => {
			const emoji150 = '🚀'.repeat(150);
			expect(emoji150.length).toBe(300);
			expect(parsePlanRequest(body({ description: emoji150 })).description).toBe(emoji150);
			expect(reasonOf(body({ description: 'x'.repeat(500) + '🚀'.repeat(501) }))).toMatch(/received 1001/);
		});

		it('does not count surrounding whitespace', () => {
			expect(reasonOf(body({ description: `   ${'a'.repeat(149)}\n\n ` }))).toMatch(/received 149/);
			expect(parsePlanRequest(body({ description: `  ${'a'.repeat(150)}  ` })).description).toBe('a'.repeat(150));
		});

		it('counts a decomposed Turkish ş (s + combining cedilla) as one character', () => {
			const decomposed = 's\u0327'.repeat(150);
			expect(codePointLength(decomposed)).toBe(300);
			const parsed = parsePlanRequest(body({ description: decomposed })).description;
			expect(parsed).toBe('ş'.repeat(150));
			expect(reasonOf(body({ description: 's\u0327'.repeat(149) }))).toMatch(/received 149/);
		});

		it('rejects wrong types, a missing value and NUL characters', () => {
			expect(reasonOf(body({ description: 12 }))).toMatch(/"description" must be a string, received a number/);
			expect(reasonOf(body({ description: ['a'] }))).toMatch(/received an array/);
			expect(reasonOf(body({ description: undefined }))).toMatch(/"description" is required/);
			expect(reasonOf(body({ description: `${'a'.repeat(200)}\u0000` }))).toMatch(/NUL/);
		});
	});
});

describe('codePointLength', () => {
	it('counts code points, not UTF-16 units', () => {
		expect(codePointLength('')).toBe(0);
		expect(codePointLength('abc')).toBe(3);
		expect(codePointLength('😀😀')).toBe(2);
		expect(codePointLength('İstanbul')).toBe(8);
	});
});

const parseImportRequest = (body: unknown) => parseRequest(importContentPlanRoute, { body } as Request).body;
const valid = { pseo_id: 1, language_code: 'en-US', template: { route: '/{service}/{city}', title: '{service} in {city}' }, rows: [{ service: 'a', city: 'b' }] };

describe('POST /plan/import contract', () => {
	it('accepts rows, a file id or a collection (with a filter), append by default', () => {
		expect(parseImportRequest(valid)).toMatchObject({ pseoId: 1, languageCode: 'en-US', mode: 'append', data: { rows: valid.rows } });
		const fileId = '0b6e2c1c-5d7e-4a52-9b59-6f1f0f6d1a11';
		expect(parseImportRequest({ ...valid, rows: undefined, file_id: fileId, mode: 'replace' })).toMatchObject({ data: { fileId }, mode: 'replace' });
		expect(parseImportRequest({ ...valid, rows: undefined, collection: 'cities', mode: 'sync' })).toMatchObject({ data: { collection: 'cities', filter: null }, mode: 'sync' });
		const filter = { country: { code: { _eq: 'ES' } } };
		expect(parseImportRequest({ ...valid, rows: undefined, collection: 'cities', filter }).data).toEqual({ collection: 'cities', filter });
	});

	it('takes mode "sync" and a source name, trimmed, "import" by default', () => {
		expect(parseImportRequest(valid).source).toBe('import');
		expect(parseImportRequest({ ...valid, source: null }).source).toBe('import');
		expect(parseImportRequest({ ...valid, mode: 'sync', source: '  price list  ' })).toMatchObject({ mode: 'sync', source: 'price list' });
		expect(parseImportRequest({ ...valid, source: 'é'.repeat(100) }).source).toHaveLength(100);
	});

	it('takes template.facts and template.required as lists of column names, trimmed, each once', () => {
		const template = { ...valid.template, facts: [' city ', 'price', 'city'], required: ['price'] };
		expect(parseImportRequest({ ...valid, template }).template).toMatchObject({ facts: ['city', 'price'], required: ['price'] });
		expect(parseImportRequest({ ...valid, template: { ...valid.template, facts: [] } }).template.facts).toEqual([]);
		expect(parseImportRequest({ ...valid, template: { ...valid.template, facts: null } }).template.facts).toBeUndefined();
	});

	it('takes template.hub as a route and a title template', () => {
		expect(parseImportRequest({ ...valid, template: { ...valid.template, hub: { route: '/{service}', title: '{service} services' } } }).template.hub).toEqual({ route: '/{service}', title: '{service} services' });
	});

	it.each([
		[{ ...valid, template: { ...valid.template, hub: { route: '/services', title: 'x' } } }, /"template.hub.route" must have at least one placeholder/],
		[{ ...valid, template: { ...valid.template, hub: { route: '/{service}' } } }, /"template.hub.title" is required/],
		[{ ...valid, template: { ...valid.template, hub: { route: '/{service}', title: 'x', extra: 1 } } }, /Unknown template.hub field/],
		[{ ...valid, template: { ...valid.template, facts: 'city' } }, /"template.facts" must be an array of column names, received a string/],
		[{ ...valid, template: { ...valid.template, facts: [1] } }, /"template.facts" must hold column names, received a number/],
		[{ ...valid, template: { ...valid.template, required: [' '] } }, /"template.required" must hold column names of 1 to 200 characters/],
		[{ ...valid, template: { ...valid.template, required: Array.from({ length: 101 }, (_, i) => `c${i}`) } }, /"template.required" may name at most 100 columns/],
		[{ ...valid, rows: undefined }, /exactly one of "rows".*"file_id".*"collection"/],
		[{ ...valid, file_id: '0b6e2c1c-5d7e-4a52-9b59-6f1f0f6d1a11' }, /exactly one of/],
		[{ ...valid, collection: 'cities' }, /exactly one of/],
		[{ ...valid, rows: undefined, collection: 'cities/../x' }, /"collection" must be the name of a collection/],
		[{ ...valid, rows: undefined, collection: 'cities', filter: [1] }, /"filter" must be a Directus filter object, received an array/],
		[{ ...valid, filter: { name: { _eq: 'x' } } }, /"filter" applies to a "collection" only/],
		[{ ...valid, rows: [] }, /"rows" is empty/],
		[{ ...valid, rows: 'a,b' }, /"rows" must be an array/],
		[{ ...valid, file_id: 'abc', rows: undefined }, /"file_id" must be the id of a file/],
		[{ ...valid, mode: 'merge' }, /"mode" must be "append", "replace" or "sync", received "merge"/],
		[{ ...valid, mode: 'sync', source: '' }, /"source" must be a name of 1 to 100 characters \(after trimming\), received 0/],
		[{ ...valid, mode: 'sync', source: '   ' }, /"source" must be a name of 1 to 100 characters \(after trimming\), received 0/],
		[{ ...valid, source: 'x'.repeat(101) }, /"source" must be a name of 1 to 100 characters \(after trimming\), received 101/],
		[{ ...valid, source: 7 }, /"source" must be a name of 1 to 100 characters, received a number/],
		[{ ...valid, source: 'a\u0000b' }, /"source" must not contain NUL characters/],
		[{ ...valid, template: { title: 'x' } }, /"template.route" is required/],
		[{ ...valid, template: { route: 'city/{city}', title: 'x' } }, /must start with a single "\/"/],
		[{ ...valid, template: { route: '/cities', title: 'x' } }, /at least one placeholder/],
		[{ ...valid, template: { route: '/{city}/', title: 'x' } }, /trailing slash/],
		[{ ...valid, template: { route: '/City/{city}', title: 'x' } }, /lower-case letters/],
		[{ ...valid, template: { route: '/{city}', title: 'x', priority: 'high' } }, /"template.priority" must be a number or a "\{column\}"/],
		[{ ...valid, template: { route: '/{city}', title: 'x', extra: 1 } }, /Unknown template field/],
		[{ ...valid, template: { route: '/{}', title: 'x' } }, /empty placeholder/],
		[{ ...valid, extra: true }, /Unknown field/],
		[{ ...valid, rows: Array.from({ length: 100_001 }, () => ({})) }, /at most 100000/],
	])('refuses %j', (body, message) => {
		expect(reasonOf(body, parseImportRequest)).toMatch(message);
	});
});
