import { describe, expect, it } from 'vitest';
import { rowOf } from './item-row.ts';

describe('rowOf', () => {
	it('gives each path its value through the related items, null where a relation is empty, objects as JSON text', () => {
		const item = { id: 7, name: 'Lyon', population: 520_000, country: { name: 'France' }, tags: ['a', 'b'] };
		expect(rowOf(item, ['name', 'population', 'country.name', 'tags'])).toEqual({ name: 'Lyon', population: 520_000, 'country.name': 'France', tags: '["a","b"]' });
		expect(rowOf({ id: 8, name: 'Atlantis', country: null }, ['name', 'country.name'])).toEqual({ name: 'Atlantis', 'country.name': null });
	});
});
