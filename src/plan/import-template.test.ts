import { describe, expect, it } from 'vitest';
import { hubFromRow, pageFromRow, placeholdersOf, slugOf, templateColumns } from './import-template.ts';

describe('slugOf', () => {
	it('folds accents, keeps letters of every script, lower-cases and hyphenates the rest', () => {
		expect(slugOf('Düsseldorf')).toBe('dusseldorf');
		expect(slugOf('São Paulo')).toBe('sao-paulo');
		expect(slugOf('Straße & Co.')).toBe('strasse-co');
		expect(slugOf('東京')).toBe('東京');
		expect(slugOf('Москва')).toBe('москва');
		expect(slugOf('  --  ')).toBe('');
	});

	it('gives plain ASCII, which takes a shorter way, the slug the Unicode way gives', () => {
		expect(slugOf('  Hello,  World!! 42 ')).toBe('hello-world-42');
		expect(slugOf('--A_b~C--')).toBe('a-b-c');
		expect(slugOf('New York')).toBe(slugOf('New York\u00a0').replace(/-$/, ''));
		// The same words with one accented letter go the Unicode way; the rest of the slug is the same.
		expect(slugOf('Caf\u00e9 Bar, 12th St.')).toBe(`cafe-${slugOf('Bar, 12th St.')}`);
	});
});

describe('placeholdersOf', () => {
	it('lists the columns a template names', () => {
		expect(placeholdersOf('/{service}/{ city }')).toEqual(['service', 'city']);
		expect(placeholdersOf('/static')).toEqual([]);
	});
});

describe('templateColumns', () => {
	it('lists every column the template names, with the fields naming it', () => {
		const columns = templateColumns({ route: '/{service}/{city}', title: '{service} in {city}', priority: '{rank}', facts: ['city', 'price'], required: ['price'] });
		expect([...columns]).toEqual([
			['service', ['route', 'title']],
			['city', ['route', 'title', 'facts']],
			['rank', ['priority']],
			['price', ['facts', 'required']],
		]);
	});
});

describe('hubs', () => {
	const template = { route: '/{service}/{city}', title: '{service} in {city}', hub: { route: '/{service}', title: '{service} services' } };
	it('gives a page its hub as parent route, and the hub its route and title from the row', () => {
		expect(pageFromRow(template, { service: 'Boiler Repair', city: 'Leeds' })).toMatchObject({ route: '/boiler-repair/leeds', parent_route: '/boiler-repair' });
		expect(hubFromRow(template.hub, { service: 'Boiler Repair', city: 'Leeds' })).toEqual({ route: '/boiler-repair', title: 'Boiler Repair services' });
		expect(hubFromRow(template.hub, { city: 'Leeds' })).toBeNull();
		expect(templateColumns(template).get('service')).toEqual(['route', 'title', 'hub.route', 'hub.title']);
	});
});

describe('pageFromRow', () => {
	const template = { route: '/{service}/{city}', title: '{service} in {city}', primary_keyword: '{service} {city}', priority: '{rank}', cluster: '{service}' };

	it('writes the route, title, keyword, priority and cluster of a row, keeps the row, and takes its columns as facts', () => {
		const row = { service: 'Boiler Repair', city: 'Málaga', rank: '7.5' };
		expect(pageFromRow(template, row)).toEqual({
			route: '/boiler-repair/malaga',
			title: 'Boiler Repair in Málaga',
			priority: 7.5,
			primary_keyword: 'Boiler Repair Málaga',
			cluster: 'boiler-repair',
			facts: row,
			variables: row,
		});
	});

	it('takes the facts template.facts lists, in its order, values of the type they came with; none for an empty list', () => {
		const row = { city: 'Leeds', population: 812000, open: true, price: ' 95.50 ', note: '', extra: null };
		const page = pageFromRow({ route: '/{city}', title: '{city}', facts: ['price', 'population', 'open', 'note', 'extra'] }, row);
		expect(page).toMatchObject({ facts: { price: '95.50', population: 812000, open: true } });
		expect(Object.keys((page as { facts: object }).facts)).toEqual(['price', 'population', 'open']);
		expect(pageFromRow({ route: '/{city}', title: '{city}', facts: [] }, row)).toMatchObject({ facts: null });
	});

	it('skips a row without a value for a required column as missing_data, before any other check', () => {
		const strict = { route: '/{city}', title: '{city}', required: ['price'] };
		expect(pageFromRow(strict, { city: 'Leeds', price: 0 })).toMatchObject({ route: '/leeds' });
		expect(pageFromRow(strict, { city: 'Leeds', price: false })).toMatchObject({ route: '/leeds' });
		expect(pageFromRow(strict, { city: 'Leeds' })).toBe('missing_data');
		expect(pageFromRow(strict, { city: 'Leeds', price: '  ' })).toBe('missing_data');
		expect(pageFromRow(strict, { price: 3 })).toBe('invalid');
		expect(pageFromRow(strict, {})).toBe('missing_data');
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
