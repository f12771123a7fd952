import { describe, expect, it } from 'vitest';
import type { SyncedPlanPage } from './plan-page-store.ts';
import { changedFields, type SyncField } from './plan-sync.ts';

const stored: SyncedPlanPage = {
	id: 7,
	route: '/plumbing/leeds',
	title: 'Plumbing in Leeds',
	priority: 9.7,
	primary_keyword: 'plumbing leeds',
	parent_route: '/plumbing',
	cluster: 'plumbing',
	facts: { city: 'Leeds', price: 95 },
	source: 'prices',
	source_item: null,
	retired: false,
};
const row = { route: stored.route, title: stored.title, priority: 9.7, primary_keyword: 'plumbing leeds', parent_route: '/plumbing', cluster: 'plumbing', facts: { price: 95, city: 'Leeds' } };
const ALL: SyncField[] = ['title', 'primary_keyword', 'priority', 'cluster', 'parent_route', 'facts'];

describe('changedFields', () => {
	it('finds nothing when the row gives what the plan has, facts in any order', () => {
		expect(changedFields(stored, row, ALL)).toEqual([]);
	});

	it('names each field the row changes', () => {
		expect(changedFields(stored, { ...row, facts: { city: 'Leeds', price: 99 } }, ALL)).toEqual(['facts']);
		expect(changedFields(stored, { ...row, title: 'Plumbers in Leeds', priority: 3 }, ALL)).toEqual(['title', 'priority']);
		expect(changedFields(stored, { ...row, primary_keyword: null, cluster: 'gas', parent_route: null }, ALL)).toEqual(['primary_keyword', 'cluster', 'parent_route']);
	});

	it('compares only the fields the data gives', () => {
		expect(changedFields(stored, { ...row, cluster: null, priority: 0 }, ['title', 'facts'])).toEqual([]);
	});

	it('compares as the plan stores: an empty title is the route, a missing priority 0, no facts and empty facts alike, a MySQL float equal to its double', () => {
		expect(changedFields({ ...stored, title: stored.route }, { ...row, title: '' }, ['title'])).toEqual([]);
		expect(changedFields({ ...stored, priority: 0 }, { ...row, priority: Number.NaN }, ['priority'])).toEqual([]);
		expect(changedFields({ ...stored, facts: null }, { ...row, facts: {} }, ['facts'])).toEqual([]);
		expect(changedFields({ ...stored, priority: 9.69999980926514 }, row, ['priority'])).toEqual([]);
		expect(changedFields({ ...stored, primary_keyword: null }, { ...row, primary_keyword: '' }, ['primary_keyword'])).toEqual([]);
	});
});
