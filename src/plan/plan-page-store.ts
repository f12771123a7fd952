import type { Knex } from 'knex';
import { arrayLiteral, dbTimestamp, existingRoutes, vendorOf } from '../shared/database.ts';
import { factsOf, type Facts } from '../shared/facts.ts';
import type { PlanPage } from './plan-page.ts';

/*
 * The owner of `pseo_plan_pages`: a website's content plan, one row per route, unique by (pseo_id, route). The
 * rows are what generation reads (by priority, through an index) and what editors sort, filter, retitle and
 * delete in the app; each plan's record (plan-store.ts) keeps its metadata (language, description, the model's original
 * answer). A plan that POST /generate/main-json produces replaces the website's rows, as it replaced the plan
 * before; `has_post` is kept by the engine in the transaction that stores each post. An imported page records its
 * `source`; a sync of that source (plan-sync.ts) stamps the pages it adds, changes, revives or retires with its run
 * (`sync_run`), and retires the pages its rows no longer produce (`retired_at`): a retired page stays a row, but
 * nothing generates it, links to it or counts it.
 */

export const PLAN_PAGES = 'pseo_plan_pages';

/** Rows per INSERT statement: 18 columns a row stay under SQLite's historical limit of 999 bound values. */
const ROWS_PER_INSERT = 55;
/** Rows per multi-row UPDATE outside PostgreSQL: 17 bound values a row (an id and a WHEN pair for each of 8 columns). */
const ROWS_PER_UPDATE = 55;
/** Routes per `whereIn`: keeps every statement under SQLite's bound-variable limit. */
const ROUTES_PER_QUERY = 500;

/** Whose plan the rows are, and which plan record they came from. */
export interface PlanOwner {
	pseoId: number;
	userId: string | null;
	planId: number | null;
}

/**
 * A plan page with the data row it was made from (an import's), if any, and the primary key of the Directus item that
 * row was read from (an import from a collection).
 */
export type StoredPlanPage = PlanPage & { variables?: Record<string, unknown> | null; source_item?: string | null };

/** Replaces a website's plan pages with `pages`, inside the caller's transaction; `has_post` from the posts that exist. */
export async function replacePlanPages(trx: Knex.Transaction, owner: PlanOwner, pages: readonly StoredPlanPage[], posted: ReadonlySet<string>): Promise<number> {
	await deletePlanPages(trx, owner.pseoId);
	return insertPlanPages(trx, owner, pages, posted);
}

/** Where imported pages come from: the import's `source`, and the run that produced them (its plan record's id). */
export interface PageOrigin {
	source: string;
	syncRun: number;
}

/** Adds plan pages whose routes the website's plan does not have yet; returns how many were added. */
export async function insertPlanPages(
	trx: Knex.Transaction,
	owner: PlanOwner,
	pages: readonly StoredPlanPage[],
	posted: ReadonlySet<string>,
	origin: PageOrigin | null = null,
): Promise<number> {
	const unique = new Map<string, StoredPlanPage>();
	for (const page of pages) if (typeof page.route === 'string' && !unique.has(page.route)) unique.set(page.route, page);
	// PostgreSQL skips the routes the plan has by ON CONFLICT in the insert itself: a lookup first would probe the
	// unique index once more for every route.
	const existing = vendorOf(trx) === 'postgres' ? new Set<string>() : await existingRoutes(trx, PLAN_PAGES, owner.pseoId, [...unique.keys()]);
	return insertNewPlanPages(
		trx,
		owner,
		[...unique.values()].filter((page) => !existing.has(page.route)),
		posted,
		origin,
	);
}

/**
 * Inserts plan pages of routes the caller found missing from the plan (each route once); returns how many were
 * inserted. A route stored meanwhile is skipped on PostgreSQL (ON CONFLICT), and fails the statement elsewhere.
 */
export async function insertNewPlanPages(
	trx: Knex.Transaction,
	owner: PlanOwner,
	pages: readonly StoredPlanPage[],
	posted: ReadonlySet<string>,
	origin: PageOrigin | null,
): Promise<number> {
	const now = dbTimestamp(trx);
	const rows = pages.map((page) => ({
		pseo_id: owner.pseoId,
		main_json_id: owner.planId,
		user_id: owner.userId,
		route: page.route,
		...storedFields(page),
		search_intent: page.search_intent ?? null,
		page_type: page.page_type ?? null,
		variables: page.variables ? JSON.stringify(page.variables) : null,
		has_post: posted.has(page.route),
		source_item: page.source_item ?? null,
		source: origin?.source ?? null,
		sync_run: origin?.syncRun ?? null,
		date_created: now,
	}));
	if (rows.length === 0) return 0;
	if (vendorOf(trx) === 'postgres') return insertArrays(trx, owner, rows, origin, now);
	for (let i = 0; i < rows.length; i += ROWS_PER_INSERT) await trx(PLAN_PAGES).insert(rows.slice(i, i + ROWS_PER_INSERT));
	return rows.length;
}

/** The fields of a plan page that its data gives, as stored: a title (the route without one), a finite priority, facts as JSON or null. */
function storedFields(page: StoredPlanPage) {
	return {
		title: typeof page.title === 'string' && page.title !== '' ? page.title : page.route,
		priority: Number.isFinite(Number(page.priority)) ? Number(page.priority) : 0,
		primary_keyword: page.primary_keyword ?? null,
		parent_route: page.parent_route ?? null,
		cluster: page.cluster ?? null,
		facts: page.facts && Object.keys(page.facts).length > 0 ? JSON.stringify(page.facts) : null,
	};
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
	source_item: string | null;
};

/**
 * PostgreSQL: the rows as one INSERT ... SELECT unnest with an array a column, those whose route the plan has
 * already skipped by the unique (pseo_id, route) index; returns how many were inserted. As VALUES lists of 80 rows, an
 * import of 100,000 pages was 1,250 statements of 1,120 bound parameters each, and PostgreSQL spent about four times
 * the CPU of the insert itself parsing and planning them (bench/scale.bench.ts); the job routes of a trigger are
 * written the same way (engine/job-route-store.ts).
 */
async function insertArrays(trx: Knex.Transaction, owner: PlanOwner, rows: readonly PlanPageRow[], origin: PageOrigin | null, now: unknown): Promise<number> {
	const column = <K extends keyof PlanPageRow>(key: K) => arrayLiteral(rows.map((row) => row[key] as string | number | null));
	const result = (await trx.raw(
		`INSERT INTO ?? (??, ??, ??, ??, ??, ??, ??, ??, ??, ??, ??, ??, ??, ??, ??, ??, ??, ??)
		SELECT ?, ?, ?::uuid, u.route, u.title, u.priority, u.primary_keyword, u.search_intent, u.page_type, u.parent_route, u.cluster, u.variables::json, u.facts::json, u.has_post, u.source_item, ?::text, ?::int, ?
		FROM unnest(?::text[], ?::text[], ?::float8[], ?::text[], ?::text[], ?::text[], ?::text[], ?::text[], ?::text[], ?::text[], ?::boolean[], ?::text[])
			AS u(route, title, priority, primary_keyword, search_intent, page_type, parent_route, cluster, variables, facts, has_post, source_item)
		ON CONFLICT (pseo_id, route) DO NOTHING`,
		[
			PLAN_PAGES,
			...['pseo_id', 'main_json_id', 'user_id', 'route', 'title', 'priority', 'primary_keyword', 'search_intent', 'page_type', 'parent_route', 'cluster', 'variables', 'facts', 'has_post', 'source_item', 'source', 'sync_run', 'date_created'],
			owner.pseoId,
			owner.planId,
			owner.userId,
			origin?.source ?? null,
			origin?.syncRun ?? null,
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
			column('source_item'),
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

/** A plan page as a sync compares it with its row: what the data gave it, whose it is, and whether it is retired. */
export interface SyncedPlanPage {
	id: number;
	route: string;
	title: string;
	priority: number;
	primary_keyword: string | null;
	parent_route: string | null;
	cluster: string | null;
	facts: Facts | null;
	/** The import source that added it; null for a page of an AI plan or an editor's. */
	source: string | null;
	/** The primary key of the Directus item it was last imported from, if any. */
	source_item: string | null;
	retired: boolean;
}

const SYNCED_COLUMNS = ['id', 'route', 'title', 'priority', 'primary_keyword', 'parent_route', 'cluster', 'facts', 'source', 'source_item', 'retired_at'];

/**
 * The plan pages of these pages' routes of a website, by route, retired or not: one statement per 500 routes, or on
 * PostgreSQL one statement for all (an index probe per route). PostgreSQL is also given each page's title and facts
 * as they would be stored, and sends back neither when the stored ones are the same text: most pages of a sync are
 * unchanged, and their title and facts were most of what it read and parsed.
 */
export async function readSyncedPages(knex: Knex, pseoId: number, pages: readonly StoredPlanPage[]): Promise<Map<string, SyncedPlanPage>> {
	const found = new Map<string, SyncedPlanPage>();
	const text = (value: unknown) => (typeof value === 'string' ? value : null);
	const page = (row: Record<string, unknown>, title: string, facts: Facts | null): SyncedPlanPage => ({
		id: Number(row['id']),
		route: String(row['route']),
		title,
		priority: Number(row['priority'] ?? 0),
		primary_keyword: text(row['primary_keyword']),
		parent_route: text(row['parent_route']),
		cluster: text(row['cluster']),
		facts,
		source: text(row['source']),
		source_item: text(row['source_item']),
		retired: row['retired'] === true || (row['retired_at'] !== null && row['retired_at'] !== undefined),
	});
	if (vendorOf(knex) === 'postgres') {
		if (pages.length === 0) return found;
		const stored = pages.map((candidate) => {
			const fields = storedFields(candidate);
			return { route: candidate.route, title: fields.title, factsJson: fields.facts, facts: fields.facts === null ? null : (candidate.facts ?? null) };
		});
		const { rows } = (await knex.raw(
			`SELECT t.id, t.priority, t.primary_keyword, t.parent_route, t.cluster, t.source, t.source_item, t.retired_at IS NOT NULL AS retired,
				t.title IS NOT DISTINCT FROM v.title AS same_title, CASE WHEN t.title IS NOT DISTINCT FROM v.title THEN NULL ELSE t.title END AS title,
				t.facts::text IS NOT DISTINCT FROM v.facts AS same_facts, CASE WHEN t.facts::text IS NOT DISTINCT FROM v.facts THEN NULL ELSE t.facts END AS facts,
				v.ord
			FROM unnest(?::text[], ?::text[], ?::text[]) WITH ORDINALITY AS v(route, title, facts, ord)
			CROSS JOIN LATERAL (SELECT * FROM ?? WHERE pseo_id = ? AND route = v.route OFFSET 0) AS t`,
			[
				arrayLiteral(stored.map((candidate) => candidate.route)),
				arrayLiteral(stored.map((candidate) => candidate.title)),
				arrayLiteral(stored.map((candidate) => candidate.factsJson)),
				PLAN_PAGES,
				pseoId,
			],
		)) as { rows: Record<string, unknown>[] };
		for (const row of rows) {
			const sent = stored[Number(row['ord']) - 1]!;
			row['route'] = sent.route;
			const title = row['same_title'] === true ? sent.title : String(row['title'] ?? row['route']);
			const facts = row['same_facts'] === true ? sent.facts : factsOf(row['facts']);
			found.set(String(row['route']), page(row, title, facts));
		}
		return found;
	}
	const routes = pages.map((candidate) => candidate.route);
	for (let i = 0; i < routes.length; i += ROUTES_PER_QUERY) {
		const rows = (await knex(PLAN_PAGES).where('pseo_id', pseoId).whereIn('route', routes.slice(i, i + ROUTES_PER_QUERY)).select(SYNCED_COLUMNS)) as Record<string, unknown>[];
		for (const row of rows) found.set(String(row['route']), page(row, String(row['title'] ?? row['route']), factsOf(row['facts'])));
	}
	return found;
}

/**
 * Writes what their data now gives to plan pages (by id), stamps them with the sync run that produced them and
 * clears their retirement, inside the sync's transaction: on PostgreSQL one UPDATE ... FROM unnest for any number of
 * pages, elsewhere one UPDATE of CASE expressions per 55 pages. A page's `variables` or `source_item` left null keeps
 * the stored one (a hub has no row, nor an item, of its own).
 */
export async function updatePlanPages(trx: Knex.Transaction, pages: readonly (StoredPlanPage & { id: number })[], syncRun: number): Promise<void> {
	if (pages.length === 0) return;
	const rows = pages.map((page) => ({
		id: page.id,
		...storedFields(page),
		variables: page.variables ? JSON.stringify(page.variables) : null,
		source_item: page.source_item ?? null,
	}));
	type Row = (typeof rows)[number];
	const fields = ['title', 'priority', 'primary_keyword', 'parent_route', 'cluster', 'facts', 'variables', 'source_item'] as const;
	/** Fields that keep the stored value when the page gives none (a hub has no row, nor an item, of its own). */
	const kept = new Set<string>(['variables', 'source_item']);
	if (vendorOf(trx) === 'postgres') {
		const column = (key: keyof Row) => arrayLiteral(rows.map((row) => row[key]));
		await trx.raw(
			`UPDATE ?? AS p SET title = u.title, priority = u.priority, primary_keyword = u.primary_keyword, parent_route = u.parent_route, cluster = u.cluster,
				facts = u.facts::json, variables = coalesce(u.variables::json, p.variables), source_item = coalesce(u.source_item, p.source_item),
				sync_run = ?::int, retired_at = NULL
			FROM unnest(?::int[], ?::text[], ?::float8[], ?::text[], ?::text[], ?::text[], ?::text[], ?::text[], ?::text[])
				AS u(id, title, priority, primary_keyword, parent_route, cluster, facts, variables, source_item)
			WHERE p.id = u.id`,
			[PLAN_PAGES, syncRun, column('id'), ...fields.map((field) => column(field))],
		);
		return;
	}
	for (let i = 0; i < rows.length; i += ROWS_PER_UPDATE) {
		const slice = rows.slice(i, i + ROWS_PER_UPDATE);
		const cases = (field: (typeof fields)[number]) => ({ sql: `CASE ?? ${slice.map(() => 'WHEN ? THEN ?').join(' ')} END`, bindings: ['id', ...slice.flatMap((row) => [row.id, row[field]])] });
		const sets = fields.map((field) => {
			const { sql, bindings } = cases(field);
			return kept.has(field) ? { sql: `?? = coalesce(${sql}, ??)`, bindings: [field, ...bindings, field] } : { sql: `?? = ${sql}`, bindings: [field, ...bindings] };
		});
		await trx.raw(`UPDATE ?? SET ${sets.map((set) => set.sql).join(', ')}, ?? = ?, ?? = NULL WHERE ?? IN (${slice.map(() => '?').join(', ')})`, [
			PLAN_PAGES,
			...sets.flatMap((set) => set.bindings),
			'sync_run',
			syncRun,
			'retired_at',
			'id',
			...slice.map((row) => row.id),
		]);
	}
}

/** Clears the retirement of plan pages (by id) whose row came back unchanged, stamping them with the sync run. */
export async function revivePlanPages(trx: Knex.Transaction, ids: readonly number[], syncRun: number): Promise<void> {
	for (let i = 0; i < ids.length; i += ROUTES_PER_QUERY) {
		await trx(PLAN_PAGES).whereIn('id', ids.slice(i, i + ROUTES_PER_QUERY)).update({ sync_run: syncRun, retired_at: null });
	}
}

/**
 * Retires every page of a website's `source` that is not retired yet and that sync run `syncRun` neither wrote (an
 * added or updated page carries the run) nor met unchanged (`unchanged`, by id), stamping them with the run, 500 at a
 * time; each batch's routes are handed to `retired` in the same transaction. Returns how many. The candidates are
 * read in one statement (an id and a route each): a sync that changes little writes little, where stamping every
 * page it met would rewrite each row of the source. Pages of other sources, and those without one (an AI plan's, an
 * editor's), are never touched.
 */
export async function retireUnsyncedPages(
	trx: Knex.Transaction,
	scope: { pseoId: number; source: string; syncRun: number; unchanged: ReadonlySet<number>; items?: readonly string[] },
	retired: (routes: readonly string[]) => Promise<void>,
): Promise<number> {
	const { pseoId, source, syncRun, unchanged, items } = scope;
	const unsynced = (narrow: (query: Knex.QueryBuilder) => void) =>
		trx(PLAN_PAGES)
			.where({ pseo_id: pseoId, source })
			.whereNull('retired_at')
			.andWhere((query) => query.whereNull('sync_run').orWhereNot('sync_run', syncRun))
			.modify(narrow)
			.select('id', 'route') as Promise<{ id: number | string; route: string }[]>;
	// A sync of some items only (a followed collection's changes) can retire only the pages of those items.
	let candidates: { id: number | string; route: string }[] = [];
	if (!items) candidates = await unsynced(() => undefined);
	else for (let i = 0; i < items.length; i += ROUTES_PER_QUERY) candidates.push(...(await unsynced((query) => query.whereIn('source_item', items.slice(i, i + ROUTES_PER_QUERY)))));
	const vanished = candidates.filter((page) => !unchanged.has(Number(page.id))).sort((a, b) => Number(a.id) - Number(b.id));
	const retiredAt = dbTimestamp(trx);
	for (let i = 0; i < vanished.length; i += ROUTES_PER_QUERY) {
		const pages = vanished.slice(i, i + ROUTES_PER_QUERY);
		await trx(PLAN_PAGES).whereIn('id', pages.map((page) => page.id)).update({ retired_at: retiredAt, sync_run: syncRun });
		await retired(pages.map((page) => page.route));
	}
	return vanished.length;
}

/** Sets the priority of these routes of a website's plan: one statement per distinct priority and 500 routes. */
export async function setPriorities(trx: Knex.Transaction, pseoId: number, priorities: ReadonlyMap<string, number>): Promise<void> {
	const byValue = new Map<number, string[]>();
	for (const [route, priority] of priorities) byValue.set(priority, [...(byValue.get(priority) ?? []), route]);
	for (const [priority, routes] of byValue) {
		for (let i = 0; i < routes.length; i += ROUTES_PER_QUERY) {
			await trx(PLAN_PAGES).where('pseo_id', pseoId).whereIn('route', routes.slice(i, i + ROUTES_PER_QUERY)).update({ priority });
		}
	}
}

/** Which of these routes of a website's plan are retired: a sync of their source found no row for them. */
export async function retiredAmong(knex: Knex, pseoId: number, routes: readonly string[]): Promise<Set<string>> {
	const retired = new Set<string>();
	for (let i = 0; i < routes.length; i += ROUTES_PER_QUERY) {
		const rows = (await knex(PLAN_PAGES).where('pseo_id', pseoId).whereIn('route', routes.slice(i, i + ROUTES_PER_QUERY)).whereNotNull('retired_at').select('route')) as { route: string }[];
		for (const row of rows) retired.add(row.route);
	}
	return retired;
}

/** How many plan pages a website has, retired pages aside. */
export async function countPlanPages(knex: Knex, pseoId: number): Promise<number> {
	const row = (await knex(PLAN_PAGES).where('pseo_id', pseoId).whereNull('retired_at').count({ n: '*' }).first()) as { n: number | string } | undefined;
	return Number(row?.n ?? 0);
}

/**
 * The routes of a website's plan pages, in no order: what a page may link to, without the pages themselves. Retired
 * pages are left out: their posts are taken down.
 */
export async function readPlanRoutes(knex: Knex, pseoId: number): Promise<string[]> {
	const rows = (await knex(PLAN_PAGES).where('pseo_id', pseoId).whereNull('retired_at').select('route')) as { route: string }[];
	return rows.map((row) => row.route);
}

/** Every plan page of a website but the retired ones, highest priority first (ties in the plan's order). */
export async function readPlanPages(knex: Knex, pseoId: number): Promise<PlanPage[]> {
	const rows = (await knex(PLAN_PAGES)
		.where('pseo_id', pseoId)
		.whereNull('retired_at')
		.orderBy([{ column: 'priority', order: 'desc' }, { column: 'id', order: 'asc' }])
		.select(COLUMNS)) as Record<string, unknown>[];
	return rows.map(toPlanPage);
}

/** The plan page of one route, with its facts, or null. */
export async function readPlanPage(knex: Knex, pseoId: number, route: string): Promise<PlanPage | null> {
	const row = (await knex(PLAN_PAGES).where({ pseo_id: pseoId, route }).first(WITH_FACTS)) as Record<string, unknown> | undefined;
	return row ? toPlanPage(row) : null;
}

/** The website, route and facts of plan pages, by id (500 ids a query). */
export async function readPagesFacts(knex: Knex, ids: readonly (string | number)[]): Promise<{ pseoId: number; route: string; facts: Facts | null }[]> {
	const pages: { pseoId: number; route: string; facts: Facts | null }[] = [];
	for (let i = 0; i < ids.length; i += ROUTES_PER_QUERY) {
		const rows = (await knex(PLAN_PAGES).whereIn('id', ids.slice(i, i + ROUTES_PER_QUERY)).select('pseo_id', 'route', 'facts')) as { pseo_id: number; route: string; facts: unknown }[];
		for (const row of rows) pages.push({ pseoId: Number(row.pseo_id), route: row.route, facts: factsOf(row.facts) });
	}
	return pages;
}

/** The facts of a website's plan page of `route` (null: none), or undefined when the plan has no such page. */
export async function readPlanFacts(knex: Knex, pseoId: number, route: string): Promise<Facts | null | undefined> {
	const row = (await knex(PLAN_PAGES).where({ pseo_id: pseoId, route }).first('facts')) as { facts: unknown } | undefined;
	return row ? factsOf(row.facts) : undefined;
}

/**
 * Up to `count` plan pages without a post, with their facts, highest priority first, read page by page through the
 * (pseo_id, has_post, priority) index; `isPosted` double-checks each against the posts themselves, because an
 * editor may delete a post (its row keeps `has_post`) or the flag may lag a post stored outside the engine. Retired
 * pages are never picked.
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
			.whereNull('retired_at')
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

/**
 * The plan pages of these routes of a website, with their current facts, highest priority first (ties in the plan's
 * order), retired pages left out; at most `limit` of them when given. Routes without a plan page are absent.
 */
export async function planPagesAmong(knex: Knex, pseoId: number, routes: readonly string[], limit?: number): Promise<PlanPage[]> {
	const rows: Record<string, unknown>[] = [];
	for (let i = 0; i < routes.length; i += ROUTES_PER_QUERY) {
		rows.push(
			...((await knex(PLAN_PAGES)
				.where('pseo_id', pseoId)
				.whereIn('route', routes.slice(i, i + ROUTES_PER_QUERY))
				.whereNull('retired_at')
				.select([...WITH_FACTS, 'id'])) as Record<string, unknown>[]),
		);
	}
	rows.sort((a, b) => Number(b['priority'] ?? 0) - Number(a['priority'] ?? 0) || Number(a['id']) - Number(b['id']));
	return rows.slice(0, limit ?? rows.length).map(toPlanPage);
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
 * parent it is and that have a post, highest priority first, with their titles. Retired pages are in no set.
 */
export async function hubSets(knex: Knex, pseoId: number, routes: readonly string[]): Promise<Map<string, { route: string; title: string }[]>> {
	const sets = new Map<string, { route: string; title: string }[]>();
	for (let i = 0; i < routes.length; i += ROUTES_PER_QUERY) {
		const rows = (await knex(PLAN_PAGES)
			.where({ pseo_id: pseoId, page_type: 'hub' })
			.whereNull('retired_at')
			.whereIn('route', routes.slice(i, i + ROUTES_PER_QUERY))
			.select('route')) as { route: string }[];
		for (const row of rows) sets.set(row.route, []);
	}
	const hubs = [...sets.keys()];
	for (let i = 0; i < hubs.length; i += ROUTES_PER_QUERY) {
		const rows = (await knex(PLAN_PAGES)
			.where({ pseo_id: pseoId, has_post: true })
			.whereNull('retired_at')
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
