import { describe, expect, it } from 'vitest';
import type { Following } from '../plan/data-source-store.ts';
import { FollowedCollections, type ItemWrite } from './followed-collections.ts';

const following = (pseoId: number, collection: string, related: Record<string, string[]> = {}, since = 0): Following => ({
	pseoId,
	ownerId: `owner-${pseoId}`,
	since,
	source: { collection, filter: null, template: { route: '/{name}', title: '{name}' }, source: 'data', language_code: 'en-US', related },
});

describe('FollowedCollections', () => {
	const followed = new FollowedCollections([
		following(1, 'cities', { countries: ['name'] }),
		following(2, 'cities'),
		following(3, 'shops', { cities: ['name', 'country'], countries: ['code'] }),
	]);
	/** The websites a write concerns, by id. */
	const concerned = (write: Omit<ItemWrite, 'keys'>) =>
		followed
			.concerned({ ...write, keys: [7] })
			.map((concern) => concern.pseoId)
			.sort();

	it('a write of the followed collection names its items; a related one asks for a whole sync', () => {
		expect(followed.concerned({ verb: 'update', collection: 'cities', fields: ['name'], keys: [7] }).sort((a, b) => a.pseoId - b.pseoId)).toEqual([
			{ pseoId: 1, full: false },
			{ pseoId: 2, full: false },
			{ pseoId: 3, full: true },
		]);
	});

	it('a write of a followed collection concerns every website that follows it, whatever it changes', () => {
		for (const verb of ['create', 'update', 'delete'] as const) {
			expect(concerned({ verb, collection: 'shops', fields: ['anything'] })).toEqual([3]);
			// Websites 1 and 2 follow cities; website 3 reads two fields of them, which `anything` is not.
			expect(concerned({ verb, collection: 'cities', fields: ['anything'] })).toEqual(verb === 'delete' ? [1, 2, 3] : [1, 2]);
		}
	});

	it('an update of a related collection concerns only the websites whose paths name a changed field', () => {
		expect(concerned({ verb: 'update', collection: 'countries', fields: ['name'] })).toEqual([1]);
		expect(concerned({ verb: 'update', collection: 'countries', fields: ['code', 'population'] })).toEqual([3]);
		expect(concerned({ verb: 'update', collection: 'countries', fields: ['population'] })).toEqual([]);
		expect(concerned({ verb: 'update', collection: 'cities', fields: ['population', 'country'] })).toEqual([1, 2, 3]);
	});

	it('a deleted related item concerns the websites that go through it; a created one, none', () => {
		expect(concerned({ verb: 'delete', collection: 'countries' })).toEqual([1, 3]);
		expect(concerned({ verb: 'create', collection: 'countries' })).toEqual([]);
	});

	it('a collection nobody follows concerns nobody', () => {
		expect(concerned({ verb: 'update', collection: 'directus_users', fields: ['name'] })).toEqual([]);
		expect(new FollowedCollections().concerned({ verb: 'create', collection: 'cities', keys: [1] })).toEqual([]);
	});

	it('names the followings begun since an earlier view, with their collections and start', () => {
		const later = new FollowedCollections([following(2, 'cities'), following(4, 'shops', { cities: ['name'] }, 1234)]);
		expect(later.newSince(followed)).toEqual([{ pseoId: 4, collections: ['shops', 'cities'], since: 1234 }]);
		expect(followed.newSince(later).map((entry) => entry.pseoId)).toEqual([1, 3]);
	});

	it('knows who owns a following, and when nothing is followed', () => {
		expect([followed.isOwner('owner-1'), followed.isOwner('owner-3'), followed.isOwner('owner-9')]).toEqual([true, true, false]);
		expect(followed.empty).toBe(false);
		expect(new FollowedCollections().empty).toBe(true);
	});
});
