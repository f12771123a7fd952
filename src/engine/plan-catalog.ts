import type { Knex } from 'knex';
import { createSiblingPicker, type Sibling } from '../page/page-siblings.ts';
import type { PlanPage } from '../plan/plan-page.ts';
import { PLAN_PAGES, readPlanPages, readPlanRoutes } from '../plan/plan-page-store.ts';

/*
 * A website's plan as page prompts and output checks use it: its routes (what a page may link to) and the sibling
 * picker built from its pages (what a prompt offers to link to). For a 100,000-page plan that is 100,000 routes
 * read, and a picker built from 100,000 page objects: about half a second of CPU and 70 MB of heap, which every
 * job used to spend again, a one-page on-demand job or a regeneration included.
 *
 * Small jobs share one catalog per website on the instance (`sharedPlanCatalog`): it is read again when the plan
 * changes its number of pages or its last page (an import, a new plan, a deleted page), when an editor changes a
 * plan page through Directus on this instance (`forgetPlanCatalogs`, from the hook), and at the latest a minute after
 * it was read, so that an edit made through another instance is seen within that minute. At most two websites are
 * kept, each dropped a minute after it was read, so an idle instance holds none. A bulk step, which runs once in a
 * long while and must stay within its memory, reads its own (`loadPlanCatalog`) and lets it go with the step.
 */

/** The `n` most relevant other pages of the plan for a page. */
export type SiblingPicker = (item: PlanPage, n?: number) => Sibling[];

export interface PlanCatalog {
	/** The plan's routes. */
	routes: ReadonlySet<string>;
	/** The picker over the plan's pages, built on first use; null when the plan has no page. */
	siblings(): Promise<SiblingPicker | null>;
}

/** How long a shared catalog is used before it is read again, whatever the plan's count says. */
const SHARED_TTL_MS = 60_000;
/** Websites whose catalogs are kept at once. */
const SHARED_WEBSITES = 2;

/** A website's catalog, read now, for the caller alone. */
export async function loadPlanCatalog(knex: Knex, pseoId: number): Promise<PlanCatalog> {
	const routes = new Set(await readPlanRoutes(knex, pseoId));
	let picker: Promise<SiblingPicker | null> | undefined;
	const build = async () => {
		const pages = await readPlanPages(knex, pseoId);
		return pages.length > 0 ? createSiblingPicker(pages) : null;
	};
	return {
		routes,
		siblings: () =>
			(picker ??= build().catch((error: unknown) => {
				// A failed read is tried again by the next page, not remembered.
				picker = undefined;
				throw error;
			})),
	};
}

interface SharedEntry {
	fingerprint: string;
	catalog: Promise<PlanCatalog>;
	timer: NodeJS.Timeout;
}

/** Per database (a process may hold several, as tests do), per website. */
const sharedByDatabase = new WeakMap<Knex, Map<number, SharedEntry>>();

/** The website's catalog shared by the instance's small jobs, read again when the plan changed (see above). */
export async function sharedPlanCatalog(knex: Knex, pseoId: number): Promise<PlanCatalog> {
	let shared = sharedByDatabase.get(knex);
	if (!shared) sharedByDatabase.set(knex, (shared = new Map()));
	const fingerprint = await planFingerprint(knex, pseoId);
	const cached = shared.get(pseoId);
	if (cached && cached.fingerprint === fingerprint) return cached.catalog;
	if (cached) forget(shared, pseoId, cached);
	const catalog = loadPlanCatalog(knex, pseoId);
	const entries = shared;
	const entry: SharedEntry = { fingerprint, catalog, timer: setTimeout(() => forget(entries, pseoId, entry), SHARED_TTL_MS).unref() };
	shared.set(pseoId, entry);
	catalog.catch(() => forget(entries, pseoId, entry));
	for (const [oldest, other] of shared) {
		if (shared.size <= SHARED_WEBSITES) break;
		forget(shared, oldest, other);
	}
	return catalog;
}

/** Drops the database's shared catalogs: a plan page was changed through Directus. */
export function forgetPlanCatalogs(knex: Knex): void {
	const shared = sharedByDatabase.get(knex);
	if (!shared) return;
	for (const [pseoId, entry] of shared) forget(shared, pseoId, entry);
}

function forget(shared: Map<number, SharedEntry>, pseoId: number, entry: SharedEntry): void {
	clearTimeout(entry.timer);
	if (shared.get(pseoId) === entry) shared.delete(pseoId);
}

/** Changes when pages are added to or deleted from the plan: its number of pages and its last page's id. */
async function planFingerprint(knex: Knex, pseoId: number): Promise<string> {
	const row = (await knex(PLAN_PAGES).where('pseo_id', pseoId).first(knex.raw('count(*) AS pages'), knex.raw('max(id) AS last'))) as
		| { pages: number | string; last: number | string | null }
		| undefined;
	return `${row?.pages ?? 0}:${row?.last ?? ''}`;
}
