import type { SchemaOverview } from '@directus/types';
import { describe, expect, it } from 'vitest';
import { collectionSource, rowOf } from './collection-rows.ts';

const field = (name: string, alias = false) => ({ field: name, alias }) as SchemaOverview['collections'][string]['fields'][string];

/** cities (id, name, population, country → countries, branches: a list of related items); countries (id, name). */
const schema = {
	collections: {
		cities: { collection: 'cities', primary: 'id', fields: { id: field('id'), name: field('name'), population: field('population'), country: field('country'), branches: field('branches', true) } },
		countries: { collection: 'countries', primary: 'code', fields: { code: field('code'), name: field('name') } },
		directus_users: { collection: 'directus_users', primary: 'id', fields: { id: field('id'), email: field('email') } },
	},
	relations: [{ collection: 'cities', field: 'country', related_collection: 'countries', schema: null, meta: null }],
} as unknown as SchemaOverview;

describe('collectionSource', () => {
	it('takes fields of the collection and of many-to-one related items by their path, with the primary key', () => {
		expect(collectionSource(schema, { collection: 'cities', filter: null }, ['name', 'country.name'])).toEqual({
			collection: 'cities',
			filter: null,
			primaryKey: 'id',
			paths: ['name', 'country.name'],
			related: new Map([['countries', ['name']]]),
		});
	});

	it('names what it cannot read: an unknown or system collection, a missing field, a path through a value, a list', () => {
		expect(() => collectionSource(schema, { collection: 'towns', filter: null }, ['name'])).toThrow(/no collection "towns"/);
		expect(() => collectionSource(schema, { collection: 'directus_users', filter: null }, ['email'])).toThrow(/no collection "directus_users"/);
		expect(() => collectionSource(schema, { collection: 'cities', filter: null }, ['nme', 'country.capital', 'name.first', 'branches'])).toThrow(
			'The template names fields that collection "cities" cannot give: "nme" (no such field), "country.capital" ("countries" has no field "capital"), ' +
				'"name.first" ("name" is not a relation to one item), "branches" (a list of related items, not a value). Its fields are: id, name, population, country, branches.',
		);
	});
});

describe('rowOf', () => {
	it('gives each path its value through the related items, null where a relation is empty, objects as JSON text', () => {
		const item = { id: 7, name: 'Lyon', population: 520_000, country: { name: 'France' }, tags: ['a', 'b'] };
		expect(rowOf(item, ['name', 'population', 'country.name', 'tags'])).toEqual({ name: 'Lyon', population: 520_000, 'country.name': 'France', tags: '["a","b"]' });
		expect(rowOf({ id: 8, name: 'Atlantis', country: null }, ['name', 'country.name'])).toEqual({ name: 'Atlantis', 'country.name': null });
	});
});
