import type { Knex } from 'knex';
import { arrayLiteral, dbTimestamp, existingRoutes, vendorOf } from '../shared/database.ts';
import { factsOf } from '../shared/facts.ts';
import type { PlanPage } from './plan-page.ts';

/*
 * The owner of `pseo_plan_pages`: a website's content plan, one row per route, unique by (pseo_id, route). The
 * rows are what generation reads (by priority, through an index) and what editors sort, filter, retitle and
 * delete in the app; each plan's record (plan-store.ts) keeps its metadata (language, description, the model's original
 * answer). A plan that POST /generate/main-json produces replaces the website's rows, as it replaced the plan
 * before; `has_post` is kept by the engine in the transaction that stores each post.
 */

export const PLAN_PAGES = 'pseo_plan_pages';

/** Rows per INSERT statement: 15 columns a row stays under SQLite's historical limit of 999 bound values. */
const ROWS_PER_INSERT = 64;
/** Routes per `whereIn`: keeps every statement under SQLite's bound-variable limit. */
const ROUTES_PER_QUERY = 500;

/** Whose plan the rows are, and which plan record they came from. */
export interface PlanOwner {
	pseoId: number;
	userId: string | null;
	planId: number | null;
}

/** A plan page with the data row it was made from (an import's), if any. */
export type StoredPlanPage = PlanPage & { variables?: Record<string, unknown> | null };

/** Replaces a website's plan pages with `pages`, inside the caller's transaction; `has_post` from the posts that exist. */
export async function replacePlanPages(trx: Knex.Transaction, owner: PlanOwner, pages: readonly StoredPlanPage[], posted: ReadonlySet<string>): Promise<number> {
	await deletePlanPages(trx, owner.pseoId);
	return insertPlanPages(trx, owner, pages, posted);
}

/** Adds plan pages whose routes the website's plan does not have yet; returns how many were added. */
export async function insertPlanPages(trx: Knex.Transaction, owner: PlanOwner, pages: readonly StoredPlanPage[], posted: ReadonlySet<string>): Promise<number> {
	const now = dbTimestamp(trx);
	const unique = new Map<string, StoredPlanPage>();
	for (const page of pages) if (typeof page.route === 'string' && !unique.has(page.route)) unique.set(page.route, page);
	// PostgreSQL skips the routes the plan has by ON CONFLICT in the insert itself: a lookup first would probe the
	// unique index once more for every route.
	const postgres = vendorOf(trx) === 'postgres';
	const existing = postgres ? new Set<string>() : await existingRoutes(trx, PLAN_PAGES, owner.pseoId, [...unique.keys()]);
	const rows = [...unique.values()]
		.filter((page) => !existing.has(page.route))
		.map((page) => ({
			pseo_id: owner.pseoId,
			main_json_id: owner.planId,
			user_id: owner.userId,
			route: page.route,
			title: typeof page.title === 'string' && page.title !== '' ? page.title : page.route,
			priority: Number.isFinite(Number(page.priority)) ? Number(page.priority) : 0,
			primary_keyword: page.primary_keyword ?? null,
			search_intent: page.search_intent ?? null,
			page_type: page.page_type ?? null,
			parent_route: page.parent_route ?? null,
			cluster: page.cluster ?? null,
			variables: page.variables ? JSON.stringify(page.variables) : null,
			facts: page.facts && Object.keys(page.facts).length > 0 ? JSON.stringify(page.facts) : null,
			has_post: posted.has(page.route),
			date_created: now,
		}));
	if (rows.length === 0) return 0;
	if (postgres) return insertArrays(trx, owner, rows, now);
	for (let i = 0; i < rows.length; i += ROWS_PER_INSERT) await trx(PLAN_PAGES).insert(rows.slice(i, i + ROWS_PER_INSERT));
	return rows.length;
}

type PlanPageRow = {
	route: string;
	title: string;
	priority: number;
	primary_keyword: string | null;
	search_intent: string | null;
	page_type: string | null;
	parent_route: string | null;
	cluster: string | null;
	variables: string | null;
	facts: string | null;
	has_post: boolean;
};

/**
 * PostgreSQL: the rows as one INSERT ... SELECT unnest with an array a column, those whose route the plan has
 * already skipped by the unique (pseo_id, route) index; returns how many were inserted. As VALUES lists of 80 rows, an
 * import of 100,000 pages was 1,250 statements of 1,120 bound parameters each, and PostgreSQL spent about four times
 * the CPU of the insert itself parsing and planning them (bench/scale.bench.ts); the job routes of a trigger are
 * written the same way (engine/job-route-store.ts).
 */
async function insertArrays(trx: Knex.Transaction, owner: PlanOwner, rows: readonly PlanPageRow[], now: unknown): Promise<number> {
	const column = <K extends keyof PlanPageRow>(key: K) => arrayLiteral(rows.map((row) => row[key] as string | number | null));
	const result = (await trx.raw(
		`INSERT INTO ?? (??, ??, ??, ??, ??, ??, ??, ??, ??, ??, ??, ??, ??, ??, ??)
		SELECT ?, ?, ?::uuid, u.route, u.title, u.priority, u.primary_keyword, u.search_intent, u.page_type, u.parent_route, u.cluster, u.variables::json, u.facts::json, u.has_post, ?
		FROM unnest(?::text[], ?::text[], ?::float8[], ?::text[], ?::text[], ?::text[], ?::text[], ?::text[], ?::text[], ?::text[], ?::boolean[])
			AS u(route, title, priority, primary_keyword, search_intent, page_type, parent_route, cluster, variables, facts, has_post)
		ON CONFLICT (pseo_id, route) DO NOTHING`,
		[
			PLAN_PAGES,
			...['pseo_id', 'main_json_id', 'user_id', 'route', 'title', 'priority', 'primary_keyword', 'search_intent', 'page_type', 'parent_route', 'cluster', 'variables', 'facts', 'has_post', 'date_created'],
			owner.pseoId,
			owner.planId,
			owner.userId,
			now,
			column('route'),
			column('title'),
			column('priority'),
			column('primary_keyword'),
			column('search_intent'),
			column('page_type'),
			column('parent_route'),
			column('cluster'),
			column('variables'),
			column('facts'),
			arrayLiteral(rows.map((row) => (row.has_post ? 'true' : 'false'))),
		],
	)) as { rowCount: number };
	return result.rowCount;
}

/**
 * Deletes every plan page of a website (a plan that replaces the previous one). A website without rows is left
 * alone: a DELETE that finds nothing still takes gap locks on MySQL, where parallel first uses would deadlock.
 */
export async function deletePlanPages(trx: Knex.Transaction, pseoId: number): Promise<void> {
	if (!(await trx(PLAN_PAGES).where('pseo_id', pseoId).first('id'))) return;
	await trx(PLAN_PAGES).where('pseo_id', pseoId).delete();
}

/** Raises a plan page's priority to at least `priority` (a hub, to the highest of the pages of its set). */
export async function raisePriority(trx: Knex.Transaction, pseoId: number, route: string, priority: number): Promise<void> {
	await trx(PLAN_PAGES).where({ pseo_id: pseoId, route }).andWhere('priority', '<', priority).update({ priority });
}

/** How many plan pages a website has. */
export async function countPlanPages(knex: Knex, pseoId: number): Promise<number> {
	const row = (await knex(PLAN_PAGES).where('pseo_id', pseoId).count({ n: '*' }).first()) as { n: number | string } | undefined;
	return Number(row?.n ?? 0);
}

/** The routes of a website's plan pages, in no order: what a page may link to, without the pages themselves. */
export async function readPlanRoutes(knex: Knex, pseoId: number): Promise<string[]> {
	const rows = (await knex(PLAN_PAGES).where('pseo_id', pseoId).select('route')) as { route: string }[];
	return rows.map((row) => row.route);
}

/** Every plan page of a website, highest priority first (ties in the plan's order). */
export async function readPlanPages(knex: Knex, pseoId: number): Promise<PlanPage[]> {
	const rows = (await knex(PLAN_PAGES)
		.where('pseo_id', pseoId)
		.orderBy([{ column: 'priority', order: 'desc' }, { column: 'id', order: 'asc' }])
		.select(COLUMNS)) as Record<string, unknown>[];
	return rows.map(toPlanPage);
}

/** The plan page of one route, with its facts, or null. */
export async function readPlanPage(knex: Knex, pseoId: number, route: string): Promise<PlanPage | null> {
	const row = (await knex(PLAN_PAGES).where({ pseo_id: pseoId, route }).first(WITH_FACTS)) as Record<string, unknown> | undefined;
	return row ? toPlanPage(row) : null;
}

/**
 * Up to `count` plan pages without a post, with their facts, highest priority first, read page by page through the
 * (pseo_id, has_post, priority) index; `isPosted` double-checks each against the posts themselves, because an
 * editor may delete a post (its row keeps `has_post`) or the flag may lag a post stored outside the engine.
 */
export async function selectUnposted(
	knex: Knex,
	pseoId: number,
	count: number,
	isPosted: (routes: readonly string[]) => Promise<Set<string>>,
): Promise<PlanPage[]> {
	const picked: PlanPage[] = [];
	const page = Math.max(count * 2, 100);
	for (let offset = 0; picked.length < count; offset += page) {
		const rows = (await knex(PLAN_PAGES)
			.where({ pseo_id: pseoId, has_post: false })
			.orderBy([{ column: 'priority', order: 'desc' }, { column: 'id', order: 'asc' }])
			.offset(offset)
			.limit(page)
			.select(WITH_FACTS)) as Record<string, unknown>[];
		if (rows.length === 0) break;
		const pages = rows.map(toPlanPage);
		const posted = await isPosted(pages.map((item) => item.route));
		for (const item of pages) {
			if (posted.has(item.route)) continue;
			picked.push(item);
			if (picked.length === count) break;
		}
		if (rows.length < page) break;
	}
	return picked;
}

/** Marks routes of a website as posted, inside the transaction that stores their posts. */
export async function markPosted(trx: Knex.Transaction, pseoId: number, routes: readonly string[]): Promise<void> {
	for (let i = 0; i < routes.length; i += ROUTES_PER_QUERY) {
		await trx(PLAN_PAGES).where('pseo_id', pseoId).whereIn('route', routes.slice(i, i + ROUTES_PER_QUERY)).update({ has_post: true });
	}
}

/**
 * Marks routes of a website as without a post again: their posts are being deleted. Done before the delete
 * commits, which errs on the safe side: a route whose delete then fails reads `has_post: false` while its post
 * stays, and the selection's check against the posts skips it anyway.
 */
export async function unmarkPosted(knex: Knex, pseoId: number, routes: readonly string[]): Promise<void> {
	for (let i = 0; i < routes.length; i += ROUTES_PER_QUERY) {
		await knex(PLAN_PAGES).where('pseo_id', pseoId).whereIn('route', routes.slice(i, i + ROUTES_PER_QUERY)).update({ has_post: false });
	}
}

const COLUMNS = ['route', 'title', 'priority', 'primary_keyword', 'search_intent', 'page_type', 'parent_route', 'cluster'];
/** A page to write: its facts too, which the plan catalog (every page of a plan, for links) goes without. */
const WITH_FACTS = [...COLUMNS, 'facts'];

function toPlanPage(row: Record<string, unknown>): PlanPage {
	const text = (value: unknown) => (typeof value === 'string' && value !== '' ? value : null);
	return {
		route: String(row['route']),
		title: String(row['title'] ?? row['route']),
		priority: Number(row['priority'] ?? 0),
		primary_keyword: text(row['primary_keyword']),
		search_intent: text(row['search_intent']),
		page_type: text(row['page_type']),
		parent_route: text(row['parent_route']),
		cluster: text(row['cluster']),
		...('facts' in row ? { facts: factsOf(row['facts']) } : {}),
	};
}

/** The title of each of these routes of a website's plan that has a plan page. */
export async function planTitles(knex: Knex, pseoId: number, routes: readonly string[]): Promise<Map<string, string>> {
	const titles = new Map<string, string>();
	for (let i = 0; i < routes.length; i += ROUTES_PER_QUERY) {
		const rows = (await knex(PLAN_PAGES).where('pseo_id', pseoId).whereIn('route', routes.slice(i, i + ROUTES_PER_QUERY)).select('route', 'title')) as { route: string; title: string | null }[];
		for (const row of rows) if (row.title) titles.set(row.route, row.title);
	}
	return titles;
}

/**
 * The sets of the hubs among these routes of a website's plan: for each hub (`page_type: "hub"`), the pages whose
 * parent it is and that have a post, highest priority first, with their titles.
 */
export async function hubSets(knex: Knex, pseoId: number, routes: readonly string[]): Promise<Map<string, { route: string; title: string }[]>> {
	const sets = new Map<string, { route: string; title: string }[]>();
	for (let i = 0; i < routes.length; i += ROUTES_PER_QUERY) {
		const rows = (await knex(PLAN_PAGES).where({ pseo_id: pseoId, page_type: 'hub' }).whereIn('route', routes.slice(i, i + ROUTES_PER_QUERY)).select('route')) as { route: string }[];
		for (const row of rows) sets.set(row.route, []);
	}
	const hubs = [...sets.keys()];
	for (let i = 0; i < hubs.length; i += ROUTES_PER_QUERY) {
		const rows = (await knex(PLAN_PAGES)
			.where({ pseo_id: pseoId, has_post: true })
			.whereIn('parent_route', hubs.slice(i, i + ROUTES_PER_QUERY))
			.orderBy([{ column: 'priority', order: 'desc' }, { column: 'id', order: 'asc' }])
			.select('route', 'title', 'parent_route')) as { route: string; title: string | null; parent_route: string }[];
		for (const row of rows) sets.get(row.parent_route)?.push({ route: row.route, title: row.title ?? row.route });
	}
	return sets;
}

/** The cluster of each of these routes of a website's plan, where the plan names one. */
export async function clustersOf(knex: Knex, pseoId: number, routes: readonly string[]): Promise<Map<string, string>> {
	const clusters = new Map<string, string>();
	for (let i = 0; i < routes.length; i += 500) {
		const rows = (await knex(PLAN_PAGES)
			.where('pseo_id', pseoId)
			.whereIn('route', routes.slice(i, i + 500))
			.whereNotNull('cluster')
			.select('route', 'cluster')) as { route: string; cluster: string }[];
		for (const row of rows) if (row.cluster.trim() !== '') clusters.set(row.route, row.cluster.trim());
	}
	return clusters;
}
