import type { Knex } from 'knex';
import type { Logger } from '../shared/logger.ts';
import { retryConflicts } from '../shared/transaction.ts';
import { WEBSITES } from '../websites/website-store.ts';
import { PLAN_PAGES } from './plan-page-store.ts';

/*
 * The websites' plan versions (`pseo.plan_version`): how the instances' shared plan catalogs (engine/plan-catalog.ts)
 * learn that a plan changed. Every writer of plan pages bumps the version after its commit: the import, plan
 * generation and the start-up migration call {@link bumpPlanVersion}; editors' changes through Directus reach it
 * through {@link trackPlanPageChanges}, from the hook.
 */

/** Websites a plan-page change touches; `all` when they cannot be known. */
type Touched = readonly number[] | 'all';

/** Ids per `whereIn`: keeps every statement under SQLite's bound-variable limit. */
const IDS_PER_QUERY = 500;

/**
 * The website's plan version (`pseo.plan_version`): what the shared plan catalogs of small jobs compare to know
 * that a plan changed (engine/plan-catalog.ts). Null when the website does not exist.
 */
export async function readPlanVersion(knex: Knex, pseoId: number): Promise<number | null> {
	const row = (await knex(WEBSITES).where('id', pseoId).first('plan_version')) as { plan_version: number | string | null } | undefined;
	return row ? Number(row.plan_version ?? 0) : null;
}

/**
 * Tells every instance that these websites' plans changed (all websites': a change whose websites are unknown),
 * after the change is committed, never inside its transaction: the ingest of a job locks the website row and then
 * its plan pages, so a plan writer that took the row first (or a long import that held it) would deadlock with it or
 * stop it. A catalog read between the commit and this bump is of the new plan, under the old version: the bump
 * makes the next job read it once more, which is the only cost. A failure is logged, not thrown (the plan is stored;
 * the catalogs' time limit still applies).
 */
export async function bumpPlanVersion(knex: Knex, pseoIds: Touched, logger: Logger): Promise<void> {
	if (pseoIds !== 'all' && pseoIds.length === 0) return;
	try {
		// An ingest holds the website row for its chunk's transaction: on MySQL the bump waiting for it can be chosen as
		// the deadlock victim (a shared lock taken through the posts' foreign key, then upgraded), and is run again.
		await retryConflicts(
			async () => {
				const query = knex(WEBSITES);
				if (pseoIds !== 'all') query.whereIn('id', [...new Set(pseoIds)]);
				await query.update({ plan_version: knex.raw('coalesce(plan_version, 0) + 1') });
			},
			{ logger, what: 'plan version bump', context: { pseoIds } },
		);
	} catch (error) {
		logger.warn({ err: error, pseoIds }, 'pseo: the plan version could not be bumped; other instances see the plan change within a minute');
	}
}

/** The websites of these plan pages (by id), each once. */
async function websitesOfPlanPages(knex: Knex, ids: readonly (string | number)[]): Promise<number[]> {
	const websites = new Set<number>();
	for (let i = 0; i < ids.length; i += IDS_PER_QUERY) {
		const rows = (await knex(PLAN_PAGES).whereIn('id', ids.slice(i, i + IDS_PER_QUERY)).distinct('pseo_id')) as { pseo_id: number | string }[];
		for (const row of rows) websites.add(Number(row.pseo_id));
	}
	return [...websites];
}

/**
 * The handlers the hook registers for the items events of plan pages. The websites a change leaves are read before
 * it (a delete's rows are gone by its action; an update may move a page to another website) and handed to its action
 * with the array of keys the change goes on with (Directus passes the filter's keys to the action); those it reaches
 * are read after it. Bumps of one turn of the event loop go as one statement: creating thousands of plan pages
 * through the items API runs one action per page. A read that fails never refuses the change: every website's
 * version is bumped instead.
 */
export function trackPlanPageChanges(database: Knex, logger: Logger) {
	const before = new WeakMap<object, Touched>();
	const pending = { websites: new Set<number>(), all: false, scheduled: false };
	const changed = async (websites: () => Promise<Touched>) => {
		try {
			const found = await websites();
			if (found === 'all') pending.all = true;
			else for (const id of found) pending.websites.add(id);
		} catch (error) {
			logger.warn({ err: error }, "pseo: the websites of changed plan pages could not be read; every website's plan version is bumped");
			pending.all = true;
		}
		if (pending.scheduled) return;
		pending.scheduled = true;
		setImmediate(() => {
			const websites = pending.all ? 'all' : [...pending.websites];
			Object.assign(pending, { websites: new Set<number>(), all: false, scheduled: false });
			void bumpPlanVersion(database, websites, logger);
		});
	};
	const websitesBefore = async (keys: readonly (string | number)[], eventContext: unknown): Promise<Touched> => {
		try {
			// The event's own connection: the change may run inside a transaction (SQLite has a single connection).
			return await websitesOfPlanPages((eventContext as { database?: Knex } | undefined)?.database ?? database, keys);
		} catch (error) {
			logger.warn({ err: error }, 'pseo: the websites of plan pages could not be read before their change');
			return 'all';
		}
	};
	const previous = (keys: unknown): Touched => before.get(keys as object) ?? 'all';
	return {
		/** `items.delete` filter: returns the keys the delete goes on with, remembered with their websites. */
		async beforeDelete(keys: unknown, eventContext: unknown): Promise<(string | number)[]> {
			const going = [...(keys as (string | number)[])];
			before.set(going, await websitesBefore(going, eventContext));
			return going;
		},
		/** `items.update` filter: a move to another website remembers the websites the pages leave. */
		async beforeUpdate(payload: unknown, keys: unknown, eventContext: unknown): Promise<void> {
			if ('pseo_id' in (payload as object)) before.set(keys as object, await websitesBefore(keys as (string | number)[], eventContext));
		},
		afterDelete: (keys: unknown) => changed(async () => previous(keys)),
		afterCreate: (key: unknown, payload: unknown) =>
			changed(async () => {
				const pseoId = Number((payload as { pseo_id?: unknown }).pseo_id);
				return Number.isInteger(pseoId) && pseoId > 0 ? [pseoId] : websitesOfPlanPages(database, [key as string | number]);
			}),
		afterUpdate: (keys: unknown, payload: unknown) =>
			changed(async () => {
				const after = await websitesOfPlanPages(database, keys as (string | number)[]);
				if (!('pseo_id' in (payload as object))) return after;
				const left = previous(keys);
				return left === 'all' ? 'all' : [...left, ...after];
			}),
	};
}
