import type { Following } from '../plan/data-source-store.ts';

/*
 * Which websites a write of Directus items concerns, answered from memory: Directus fires an action for every item
 * written in any collection, and almost none is followed, so the answer for those must cost no query.
 *
 * - A write of the followed collection itself concerns its websites, whatever it changes: a created item may be a
 *   new page, a deleted one a retired page, and an update may move an item in or out of the filter.
 * - A related collection that the template's paths go through (`country.name`) concerns them when an update
 *   changes a field the paths name, or when items are deleted (the pages that named them lose the value). A created
 *   related item is named by no item yet: the write of the item that names it is the change.
 */

/** A write Directus announced: `items.create`, `items.update` or `items.delete` of `collection`. */
export interface ItemWrite {
	verb: 'create' | 'update' | 'delete';
	collection: string;
	/** The changed fields of an update (its payload); absent for the other verbs. */
	fields?: readonly string[];
	/** The keys of the items written. */
	keys: readonly (string | number)[];
}

/** A website a write concerns, and whether its sync must read everything (a related item changed) or these items. */
export interface Concern {
	pseoId: number;
	full: boolean;
}

interface Watcher {
	pseoId: number;
	/** Fields whose update concerns the website; null: any write. */
	fields: ReadonlySet<string> | null;
}

/** The followings of every website, indexed by the collections they read. */
export class FollowedCollections {
	readonly #byCollection = new Map<string, Watcher[]>();
	/** The collections each website reads, and since when it follows them. */
	readonly #collectionsOf = new Map<number, { collections: string[]; since: number }>();
	/** The users who own a following website. */
	readonly #owners = new Set<string>();

	constructor(followings: readonly Following[] = []) {
		for (const { pseoId, ownerId, source, since } of followings) {
			this.#owners.add(ownerId);
			this.#collectionsOf.set(pseoId, { collections: [source.collection, ...Object.keys(source.related)], since });
			this.#watch(source.collection, { pseoId, fields: null });
			for (const [collection, fields] of Object.entries(source.related)) {
				if (collection !== source.collection) this.#watch(collection, { pseoId, fields: new Set(fields) });
			}
		}
	}

	#watch(collection: string, watcher: Watcher): void {
		const watchers = this.#byCollection.get(collection);
		if (watchers) watchers.push(watcher);
		else this.#byCollection.set(collection, [watcher]);
	}

	/** Whether no website follows anything. */
	get empty(): boolean {
		return this.#collectionsOf.size === 0;
	}

	/** Whether `userId` owns a following website. */
	isOwner(userId: string): boolean {
		return this.#owners.has(userId);
	}

	/** The websites that follow a collection here and not in `before`, with the collections each reads and since when. */
	newSince(before: FollowedCollections): { pseoId: number; collections: readonly string[]; since: number }[] {
		return [...this.#collectionsOf].filter(([pseoId]) => !before.#collectionsOf.has(pseoId)).map(([pseoId, following]) => ({ pseoId, ...following }));
	}

	/**
	 * The websites whose data `write` may change. A write of the followed collection itself names the items to read
	 * again; a related item's change may reach any of them (which ones would take a query per write), so everything.
	 */
	concerned(write: ItemWrite): Concern[] {
		const watchers = this.#byCollection.get(write.collection);
		if (!watchers) return [];
		const concerned = new Map<number, boolean>();
		for (const watcher of watchers) {
			const main = watcher.fields === null;
			if (main || write.verb === 'delete' || (write.verb === 'update' && (write.fields ?? []).some((field) => watcher.fields!.has(field)))) {
				concerned.set(watcher.pseoId, (concerned.get(watcher.pseoId) ?? false) || !main);
			}
		}
		return [...concerned].map(([pseoId, full]) => ({ pseoId, full }));
	}
}
