import { describe, expect, it } from 'vitest';
import { pageFromRow, placeholdersOf, slugOf } from './import-template.ts';

describe('slugOf', () => {
	it('folds accents, keeps letters of every script, lower-cases and hyphenates the rest', () => {
		expect(slugOf('Düsseldorf')).toBe('dusseldorf');
		expect(slugOf('São Paulo')).toBe('sao-paulo');
		expect(slugOf('Straße & Co.')).toBe('strasse-co');
		expect(slugOf('東京')).toBe('東京');
		expect(slugOf('Москва')).toBe('москва');
		expect(slugOf('  --  ')).toBe('');
	});
});

describe('placeholdersOf', () => {
	it('lists the columns a template names', () => {
		expect(placeholdersOf('/{service}/{ city }')).toEqual(['service', 'city']);
		expect(placeholdersOf('/static')).toEqual([]);
	});
});

describe('pageFromRow', () => {
	const template = { route: '/{service}/{city}', title: '{service} in {city}', primary_keyword: '{service} {city}', priority: '{rank}', cluster: '{service}' };

	it('writes the route, title, keyword, priority and cluster of a row, and keeps the row', () => {
		const row = { service: 'Boiler Repair', city: 'Málaga', rank: '7.5' };
		expect(pageFromRow(template, row)).toEqual({
			route: '/boiler-repair/malaga',
			title: 'Boiler Repair in Málaga',
			priority: 7.5,
			primary_keyword: 'Boiler Repair Málaga',
			cluster: 'boiler-repair',
			variables: row,
		});
	});

	it('takes a fixed priority, and leaves optional fields out of a minimal template', () => {
		expect(pageFromRow({ route: '/{city}', title: 'Plumbers in {city}', priority: 3 }, { city: 'Leeds' })).toMatchObject({ route: '/leeds', priority: 3, primary_keyword: null, cluster: null });
	});

	it('skips a row with a missing or empty placeholder value, or a value with nothing usable for a slug', () => {
		expect(pageFromRow(template, { service: 'Roofing', rank: 1 })).toBe('invalid');
		expect(pageFromRow(template, { service: 'Roofing', city: '  ', rank: 1 })).toBe('invalid');
		expect(pageFromRow(template, { service: 'Roofing', city: '***', rank: 1 })).toBe('invalid');
	});

	it('skips a row whose priority is not a number, or whose route is too long', () => {
		expect(pageFromRow(template, { service: 'Roofing', city: 'Leeds', rank: 'high' })).toBe('invalid');
		expect(pageFromRow({ route: '/{a}', title: '{a}' }, { a: 'x'.repeat(600) })).toBe('invalid');
	});

	it('reads numbers and booleans as text', () => {
		expect(pageFromRow({ route: '/{zip}', title: 'Area {zip}' }, { zip: 10115 })).toMatchObject({ route: '/10115', title: 'Area 10115' });
	});
});
