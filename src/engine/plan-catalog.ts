import type { Knex } from 'knex';
import { createSiblingPicker, type Sibling } from '../page/page-siblings.ts';
import type { PlanPage } from '../plan/plan-page.ts';
import { readPlanPages, readPlanRoutes } from '../plan/plan-page-store.ts';
import { readPlanVersion } from '../plan/plan-version.ts';

/*
 * A website's plan as page prompts and output checks use it: its routes (what a page may link to) and the sibling
 * picker built from its pages (what a prompt offers to link to). For a 100,000-page plan that is 100,000 routes
 * read, and a picker built from 100,000 page objects: about half a second of CPU and 70 MB of heap, which every
 * job used to spend again, a one-page on-demand job or a regeneration included.
 *
 * Small jobs share one catalog per website on the instance (`sharedPlanCatalog`): it is read again when the
 * website's plan version changed, which every writer of plan pages bumps after its commit (an import, a new plan,
 * an editor's change through Directus on any instance: plan/plan-version.ts), and at the latest a minute
 * after it was read, for a change made around Directus. The version is one primary-key read; counting the plan's
 * rows, as the catalog once did, made a one-page job on a 100,000-page website take 54 ms against 35 ms on a
 * one-page website (the scale bench's regeneration medians, in one full run). At most
 * two websites are kept, each dropped a minute after it was read, so an idle instance holds none. A bulk step,
 * which runs once in a long while and must stay within its memory, reads its own (`loadPlanCatalog`) and lets it
 * go with the step.
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
	version: number | null;
	catalog: Promise<PlanCatalog>;
	timer: NodeJS.Timeout;
}

/** Per database (a process may hold several, as tests do), per website. */
const sharedByDatabase = new WeakMap<Knex, Map<number, SharedEntry>>();

/** The website's catalog shared by the instance's small jobs, read again when the plan changed (see above). */
export async function sharedPlanCatalog(knex: Knex, pseoId: number): Promise<PlanCatalog> {
	const shared = sharedByDatabase.get(knex) ?? new Map<number, SharedEntry>();
	sharedByDatabase.set(knex, shared);
	const version = await readPlanVersion(knex, pseoId);
	const cached = shared.get(pseoId);
	if (cached && cached.version === version) return cached.catalog;
	if (cached) forget(shared, pseoId, cached);
	const catalog = loadPlanCatalog(knex, pseoId);
	const entry: SharedEntry = { version, catalog, timer: setTimeout(() => forget(shared, pseoId, entry), SHARED_TTL_MS).unref() };
	shared.set(pseoId, entry);
	catalog.catch(() => forget(shared, pseoId, entry));
	for (const [oldest, other] of shared) {
		if (shared.size <= SHARED_WEBSITES) break;
		forget(shared, oldest, other);
	}
	return catalog;
}

function forget(shared: Map<number, SharedEntry>, pseoId: number, entry: SharedEntry): void {
	clearTimeout(entry.timer);
	if (shared.get(pseoId) === entry) shared.delete(pseoId);
}
