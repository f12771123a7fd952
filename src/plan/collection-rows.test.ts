import type { SchemaOverview } from '@directus/types';
import { describe, expect, it } from 'vitest';
import { collectionSource } from './collection-rows.ts';

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
			keyset: false,
		});
	});

	it('names what it cannot read: an unknown or system collection, a missing field, a path through a value, a list', () => {
		expect(() => collectionSource(schema, { collection: 'towns', filter: null }, ['name'])).toThrow(/no collection "towns"/);
		expect(() => collectionSource(schema, { collection: 'constructor', filter: null }, ['name'])).toThrow(/no collection "constructor"/);
		expect(() => collectionSource(schema, { collection: 'cities', filter: null }, ['toString'])).toThrow(/"toString" \(no such field\)/);
		expect(() => collectionSource(schema, { collection: 'cities', filter: { _and: [{ owner: { _eq: '$CURRENT_USER.id' } }] } }, ['name'])).toThrow(/dynamic variables such as \$CURRENT_USER are not taken/);
		expect(() => collectionSource(schema, { collection: 'directus_users', filter: null }, ['email'])).toThrow(/no collection "directus_users"/);
		expect(() => collectionSource(schema, { collection: 'cities', filter: null }, ['nme', 'country.capital', 'name.first', 'branches'])).toThrow(
			'The template names fields that collection "cities" cannot give: "nme" (no such field), "country.capital" ("countries" has no field "capital"), ' +
				'"name.first" ("name" is not a relation to one item), "branches" (a list of related items, not a value). Its fields are: id, name, population, country, branches.',
		);
	});
});
