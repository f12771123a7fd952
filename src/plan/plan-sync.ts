import type { Knex } from 'knex';
import { markPostsStale, postedRoutes, setPostsRetired } from '../posts/post-store.ts';
import { dbTimestamp } from '../shared/database.ts';
import { faultPoint } from '../shared/fault-injection.ts';
import { sameFacts } from '../shared/facts.ts';
import {
	insertNewPlanPages,
	insertPlanPages,
	raisePriority,
	readSyncedPages,
	retireUnsyncedPages,
	revivePlanPages,
	setPriorities,
	updatePlanPages,
	type PlanOwner,
	type StoredPlanPage,
	type SyncedPlanPage,
} from './plan-page-store.ts';

/*
 * The one way plan pages that come from data are written (an import today; a follower of a collection tomorrow):
 * the pages a source's rows produce, streamed in, compared with the plan in batches of 2,000 routes and written in a
 * few statements a batch, inside the caller's transaction.
 *
 * - `add` (an import's `append` and `replace`): a route the plan lacks is added; one it has is a duplicate.
 * - `sync`: the rows are the whole truth of their source, matched to the plan by route. A route the plan lacks is
 *   added; a page of the same source whose data changed is updated in place, and its post marked stale when the
 *   change reaches the page's text; a page of the same source that no row produces any more is retired (found at
 *   the end among the source's pages that the run neither wrote nor met unchanged: an unchanged page is remembered by
 *   its id, not rewritten, so a sync of 100,000 rows that changes 1,000 writes about 1,000); a retired page whose row
 *   comes back is revived. Pages of other sources, of an AI plan or an editor's are never touched.
 */

/** A field of a plan page that its data gives. */
export type SyncField = 'title' | 'primary_keyword' | 'priority' | 'cluster' | 'parent_route' | 'facts';

/** Fields that change what a page says: a change of any other (its priority) updates the page but leaves its post fresh. */
const WRITTEN_FIELDS: ReadonlySet<SyncField> = new Set(['title', 'primary_keyword', 'cluster', 'parent_route', 'facts']);

/** Routes compared and written per batch: PostgreSQL reads a batch in one statement. */
const SYNC_BATCH = 2000;

export interface PlanSyncOptions {
	/** The website's plan and the run: `planId`, the import's plan record, is the sync run stamped on the pages it produces. */
	owner: PlanOwner & { planId: number };
	/** The data's name: pages added record it, and a sync touches only pages of its own source. */
	source: string;
	/** `add`: new routes only (an import's `append` and `replace`); `sync`: the rows are the whole truth of `source`. */
	mode: 'add' | 'sync';
	/**
	 * The fields the data gives a row's page and a hub page (the others keep what the plan has, an editor's change
	 * included). A hub's priority is settled by {@link PlanSync.finish}, from the pages of its set.
	 */
	fields: { page: readonly SyncField[]; hub: readonly SyncField[] };
	/** Routes on the website's sitemap: a route the plan lacks among them is not added (`on_site`). */
	onSite: ReadonlySet<string>;
	/**
	 * Called in the sync's transaction with each batch of routes it retired, once their posts are marked retired: the
	 * caller queues their takedown at the website's publishing target there (publishing/takedown.ts), so that it
	 * exists exactly when the retirement commits. Given by the caller because plan may not import publishing.
	 */
	onRetired?: RetiredPages;
	/**
	 * The most pages a `sync` may add (a followed collection's sync: what the owner's balance and caps cover); the
	 * new routes beyond it are not added but counted as `waiting`, and a later sync adds them. No limit by default.
	 */
	addLimit?: number;
	/**
	 * The rows are the truth of these items only (a followed collection's changed items): only pages of these items
	 * (`source_item`) that no row produced are retired. All of the source's pages otherwise.
	 */
	items?: readonly string[];
}

/** What becomes of a batch of retired pages' posts beyond their `retired` mark, in the sync's transaction. */
export type RetiredPages = (trx: Knex.Transaction, pseoId: number, routes: readonly string[]) => Promise<void>;

/** What a sync did, in pages (`added`, `updated`, `unchanged`, `retired`) and in rows it skipped. */
interface SyncCounts {
	added: number;
	/** Pages whose data changed, and retired pages whose row came back. */
	updated: number;
	unchanged: number;
	retired: number;
	/** Rows whose route the plan has from another source (or any source, in `add`). */
	duplicate: number;
	/** Rows of a new route the website's sitemap lists. */
	on_site: number;
	/** New routes beyond `addLimit`, not added. */
	waiting: number;
}

/** A hub's priorities in an import: that of the first page of its set, and the highest of its set. */
export interface HubPriority {
	first: number;
	highest: number;
}

export interface PlanSync {
	/** A page a row produced: compared and written with the batch it falls in. */
	page(page: StoredPlanPage): Promise<void>;
	/** A hub page, met with the first page of its set and given before it (so a new hub is stored before its pages). */
	hub(page: StoredPlanPage): Promise<void>;
	/**
	 * The error of the batch being written, once it has ended, or null: the caller that stops reading rows on an
	 * error of its own asks first, because on PostgreSQL a failed write aborts the transaction, and the next read of
	 * the rows (a collection's, on that transaction) fails with "current transaction is aborted" instead of the cause
	 * (a deadlock that a retry would get past).
	 */
	failure(): Promise<unknown>;
	/**
	 * Writes the last batch, settles the hubs' priorities (raised in `add`, set in `sync`), retires what a sync's rows
	 * no longer produce, and returns the counts.
	 */
	finish(hubs: ReadonlyMap<string, HubPriority>): Promise<SyncCounts>;
}

/** A sync (or an add) of one source's pages into a website's plan, inside `trx`. */
export function createPlanSync(trx: Knex.Transaction, options: PlanSyncOptions): PlanSync {
	const { owner, source, mode, onSite } = options;
	const pseoId = owner.pseoId;
	const now = dbTimestamp(trx);
	const counts: SyncCounts = { added: 0, updated: 0, unchanged: 0, retired: 0, duplicate: 0, on_site: 0, waiting: 0 };
	let addable = options.addLimit ?? Number.POSITIVE_INFINITY;
	/** The hubs of this source that this run added or met, with the priority they have now, for `finish`. */
	const ownHubs = new Map<string, { priority: number; outcome: 'added' | 'updated' | 'unchanged' }>();
	/** The ids of the pages this run met unchanged and alive: not written, but not vanished either. */
	const unchangedIds = new Set<number>();
	/**
	 * Items (`source_item`) whose row met their own page at its route: an item has one live page of a source, so no
	 * other page of theirs can have vanished, and a sync of some items looks for vanished pages of the others only.
	 */
	const metItems = new Set<string>();
	let batch: { page: StoredPlanPage; hub: boolean }[] = [];
	/**
	 * The batch being compared and written while the caller reads the next one's rows: the database works on one
	 * batch while Node parses the next (a sync of 100,000 rows is half each). One batch at a time, in order; its error
	 * is thrown by the next push or by `finish`.
	 */
	let writing: Promise<void> | null = null;

	/**
	 * `add`: the batch's new routes are inserted in their order, a route the plan has skipped by the insert itself (ON
	 * CONFLICT on PostgreSQL, one lookup elsewhere), as an import always did: the pages before a hub, then the hub
	 * (counted only when added), so that the plan keeps the data's order. A route on the sitemap is `on_site` even when
	 * the plan has it.
	 */
	const add = async (items: readonly { page: StoredPlanPage; hub: boolean }[]) => {
		const candidates = items.filter((item) => !onSite.has(item.page.route) || skip(item, 'on_site'));
		const posted = await postedRoutes(trx, pseoId, candidates.map((item) => item.page.route));
		const origin = { source, syncRun: owner.planId };
		let pages: StoredPlanPage[] = [];
		const insertPages = async () => {
			const added = await insertPlanPages(trx, owner, pages, posted, origin);
			counts.added += added;
			counts.duplicate += pages.length - added;
			pages = [];
		};
		for (const item of candidates) {
			if (!item.hub) {
				pages.push(item.page);
				continue;
			}
			await insertPages();
			counts.added += await insertPlanPages(trx, owner, [item.page], posted, origin);
		}
		await insertPages();
	};

	/** Waits for the batch being written, throwing its error. */
	const settle = async () => {
		const written = writing;
		writing = null;
		await written;
	};

	const write = async (items: readonly { page: StoredPlanPage; hub: boolean }[]) => {
		if (items.length === 0) return;
		if (mode === 'add') return add(items);
		const stored = await readSyncedPages(trx, pseoId, items.map((item) => item.page));
		const fresh: { page: StoredPlanPage; hub: boolean }[] = [];
		const changed: (StoredPlanPage & { id: number })[] = [];
		const revivedUnchanged: number[] = [];
		const stale: string[] = [];
		const revived: string[] = [];
		for (const item of items) {
			const current = stored.get(item.page.route);
			if (!current) {
				// The sitemap counts only for a route the plan lacks: the source's own pages are on it once published.
				if (onSite.has(item.page.route)) skip(item, 'on_site');
				else if (addable <= 0) counts.waiting++;
				else {
					fresh.push(item);
					addable--;
				}
				continue;
			}
			if (current.source !== source) {
				skip(item, 'duplicate');
				continue;
			}
			if (item.page.source_item != null && item.page.source_item === current.source_item) metItems.add(item.page.source_item);
			const fields = item.hub ? options.fields.hub.filter((field) => field !== 'priority') : options.fields.page;
			const differ = changedFields(current, item.page, fields);
			// A row read from another item than the page's (a collection's; the first sync of a collection after a file)
			// updates the page's `source_item`, which a follower finds it by; its post stays fresh.
			const itemMoved = item.page.source_item !== undefined && (item.page.source_item ?? null) !== current.source_item;
			if (differ.length > 0 || itemMoved) changed.push(mergedPage(current, item.page, fields));
			else if (current.retired) revivedUnchanged.push(current.id);
			else unchangedIds.add(current.id);
			if (differ.some((field) => WRITTEN_FIELDS.has(field))) stale.push(current.route);
			if (current.retired) revived.push(current.route);
			const outcome = differ.length > 0 || itemMoved || current.retired ? 'updated' : 'unchanged';
			counts[outcome]++;
			if (item.hub) ownHubs.set(current.route, { priority: current.priority, outcome });
		}
		if (fresh.length > 0) {
			const posted = await postedRoutes(trx, pseoId, fresh.map((item) => item.page.route));
			const added = await insertNewPlanPages(trx, owner, fresh.map((item) => item.page), posted, { source, syncRun: owner.planId });
			counts.added += added;
			addable += fresh.length - added;
			// PostgreSQL skips a route stored since the lookup; it is a duplicate like any other.
			counts.duplicate += fresh.length - added;
			for (const item of fresh) if (item.hub) ownHubs.set(item.page.route, { priority: Number(item.page.priority) || 0, outcome: 'added' });
		}
		await updatePlanPages(trx, changed, owner.planId);
		await revivePlanPages(trx, revivedUnchanged, owner.planId);
		await markPostsStale(trx, pseoId, stale, now);
		await setPostsRetired(trx, pseoId, revived, false);
		// A sync killed here (kill -9) has written part of its pages inside its transaction: the durability suite's point.
		faultPoint('mid-plan-sync');
	};

	/** Counts a row that adds no page (a hub is no row, and is not counted); false, for a filter. */
	function skip(item: { hub: boolean }, reason: 'on_site' | 'duplicate'): false {
		if (!item.hub) counts[reason]++;
		return false;
	}

	const push = async (page: StoredPlanPage, hub: boolean) => {
		batch.push({ page, hub });
		if (batch.length < SYNC_BATCH) return;
		await settle();
		const items = batch;
		batch = [];
		writing = write(items);
		// Handled by the next settle(); until then, a rejection is not unhandled (the caller may stop reading rows first).
		writing.catch(() => {});
	};

	return {
		page: (page) => push(page, false),
		hub: (page) => push(page, true),
		failure: async () => {
			try {
				await settle();
				return null;
			} catch (error) {
				return error;
			}
		},
		async finish(hubs) {
			await settle();
			const items = batch;
			batch = [];
			await write(items);
			if (mode === 'add') {
				// As an import always did: a hub is raised to the highest priority of its set, never lowered.
				for (const [route, hub] of hubs) if (hub.highest > hub.first) await raisePriority(trx, pseoId, route, hub.highest);
				return counts;
			}
			const settled = new Map<string, number>();
			for (const [route, own] of ownHubs) {
				const highest = hubs.get(route)?.highest;
				if (highest === undefined || !options.fields.hub.includes('priority') || Math.fround(highest) === Math.fround(own.priority)) continue;
				// A sync of some items meets only part of a hub's set: it may raise the hub, never lower it.
				if (options.items && highest < own.priority) continue;
				settled.set(route, highest);
				if (own.outcome === 'unchanged') {
					counts.unchanged--;
					counts.updated++;
				}
			}
			await setPriorities(trx, pseoId, settled);
			counts.retired = await retireUnsyncedPages(trx, { pseoId, source, syncRun: owner.planId, unchanged: unchangedIds, ...(options.items ? { items: options.items.filter((key) => !metItems.has(key)) } : {}) }, (routes) =>
				postsRetired(trx, pseoId, routes, options.onRetired),
			);
			return counts;
		},
	};
}

/**
 * What becomes of the posts of pages a sync retired, in the sync's transaction: they are marked `retired`, and their
 * takedown at the publishing target they were published to is queued by `onRetired` in this transaction, so that it
 * exists exactly when the retirement commits (a crash after the commit leaves it to the publishing runtime).
 */
async function postsRetired(trx: Knex.Transaction, pseoId: number, routes: readonly string[], onRetired: RetiredPages | undefined): Promise<void> {
	await setPostsRetired(trx, pseoId, routes, true);
	await onRetired?.(trx, pseoId, routes);
}

/** The fields among `fields` in which a row's page differs from the plan's page, compared as they are stored. */
export function changedFields(current: SyncedPlanPage, page: StoredPlanPage, fields: readonly SyncField[]): SyncField[] {
	const text = (value: string | null | undefined) => (typeof value === 'string' && value !== '' ? value : null);
	return fields.filter((field) => {
		switch (field) {
			case 'title':
				return (text(page.title) ?? page.route) !== current.title;
			case 'priority': {
				const priority = Number.isFinite(Number(page.priority)) ? Number(page.priority) : 0;
				// MySQL keeps a priority as a single-precision float: 9.7 reads back as 9.69999980926514.
				return Math.fround(priority) !== Math.fround(current.priority);
			}
			case 'facts':
				return !sameFacts(current.facts, page.facts);
			default:
				return text(page[field]) !== text(current[field]);
		}
	});
}

/** The plan's page with the fields the data gives taken from the row's page, and the row itself. */
function mergedPage(current: SyncedPlanPage, page: StoredPlanPage, fields: readonly SyncField[]): StoredPlanPage & { id: number } {
	const from = (field: SyncField) => (fields.includes(field) ? page : current);
	return {
		id: current.id,
		route: current.route,
		title: from('title').title,
		priority: from('priority').priority,
		primary_keyword: from('primary_keyword').primary_keyword ?? null,
		cluster: from('cluster').cluster ?? null,
		parent_route: from('parent_route').parent_route ?? null,
		facts: from('facts').facts ?? null,
		variables: page.variables ?? null,
		source_item: page.source_item ?? null,
	};
}
