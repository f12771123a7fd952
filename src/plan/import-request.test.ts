import { describe, expect, it } from 'vitest';
import { parseImportRequest } from './import-request.ts';

const valid = { pseo_id: 1, language_code: 'en-US', template: { route: '/{service}/{city}', title: '{service} in {city}' }, rows: [{ service: 'a', city: 'b' }] };

describe('parseImportRequest', () => {
	it('accepts rows or a file id, append by default', () => {
		expect(parseImportRequest(valid)).toMatchObject({ pseoId: 1, languageCode: 'en-US', mode: 'append', source: { rows: valid.rows } });
		const fileId = '0b6e2c1c-5d7e-4a52-9b59-6f1f0f6d1a11';
		expect(parseImportRequest({ ...valid, rows: undefined, file_id: fileId, mode: 'replace' })).toMatchObject({ source: { fileId }, mode: 'replace' });
	});

	it.each([
		[{ ...valid, rows: undefined }, /either "rows".*or "file_id"/],
		[{ ...valid, file_id: '0b6e2c1c-5d7e-4a52-9b59-6f1f0f6d1a11' }, /not both/],
		[{ ...valid, rows: [] }, /"rows" is empty/],
		[{ ...valid, rows: 'a,b' }, /"rows" must be an array/],
		[{ ...valid, file_id: 'abc', rows: undefined }, /"file_id" must be the id of a file/],
		[{ ...valid, mode: 'merge' }, /"mode" must be "append" or "replace"/],
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
		expect(() => parseImportRequest(body)).toThrow(message);
	});
});
