import type { Knex } from 'knex';
import { factsOf, sameFacts, type Facts } from '../shared/facts.ts';
import type { StructuredData } from './structured-data.ts';
import { existingRoutes, isUniqueViolation, jsonParameter, vendorOf } from '../shared/database.ts';

/*
 * The owner of `pseo_posts`: one generated page per row, unique by (pseo_id, route). Posts are written inside the
 * engine's transactions (post + counters + refund commit together), so these functions take the caller's
 * transaction and use Knex: the items services cannot join that transaction's conditional, fenced statements.
 */

export const POSTS = 'pseo_posts';

/** What a generated page stores besides its route. */
export interface PageContent {
	title: string;
	meta_title: string | null;
	meta_description: string | null;
	h1: string | null;
	body: string;
	faq: unknown;
	internal_links: unknown;
	/** The quality gate's verdict; absent for a page stored without one. */
	quality?: PostQuality;
	/** The facts of its plan page that the page was written from and checked against; absent or null without. */
	facts?: Facts | null;
	/** Its schema.org JSON-LD (Article, FAQPage, BreadcrumbList), built by the quality gate from the page. */
	structured_data?: StructuredData | null;
}

/** What the quality gate stores on a post. */
interface PostQuality {
	status: string;
	score: number;
	issues: unknown;
	/** The MinHash signature of the page, base64, for the near-duplicate check of later pages. */
	signature: string | null;
}

/** A post as the engine writes it. */
export interface NewPost {
	pseo_id: number;
	generation_id: number;
	user_id: string;
	route: string;
	language: string | null;
	content: PageContent;
}

/** Routes per `whereIn` query: keeps every statement under SQLite's bound-variable limit. */
const ROUTES_PER_QUERY = 500;

/** Posts per INSERT statement: 21 columns a row stay under SQLite's historical limit of 999 bound values. */
const POSTS_PER_INSERT = 47;

/** The routes of a website that have a post: all of them, or those among `routes`. */
export async function postedRoutes(knex: Knex, pseoId: number, routes?: readonly string[]): Promise<Set<string>> {
	if (!routes) {
		const rows = (await knex(POSTS).where('pseo_id', pseoId).select('route')) as { route: string }[];
		return new Set(rows.map((row) => row.route));
	}
	return existingRoutes(knex, POSTS, pseoId, routes);
}

/** The stored MinHash signatures of these routes of a website (routes without a post or a signature are absent). */
export async function readSignatures(knex: Knex, pseoId: number, routes: readonly string[]): Promise<Map<string, string>> {
	const signatures = new Map<string, string>();
	for (let i = 0; i < routes.length; i += ROUTES_PER_QUERY) {
		const rows = (await knex(POSTS)
			.where('pseo_id', pseoId)
			.whereIn('route', routes.slice(i, i + ROUTES_PER_QUERY))
			.whereNotNull('quality_signature')
			.select('route', 'quality_signature')) as { route: string; quality_signature: string }[];
		for (const row of rows) signatures.set(row.route, row.quality_signature);
	}
	return signatures;
}

/** The website and route of each of these posts. */
export async function routesOfPosts(knex: Knex, postIds: readonly (string | number)[]): Promise<{ pseoId: number; route: string }[]> {
	const found: { pseoId: number; route: string }[] = [];
	for (let i = 0; i < postIds.length; i += ROUTES_PER_QUERY) {
		const rows = (await knex(POSTS).whereIn('id', postIds.slice(i, i + ROUTES_PER_QUERY)).select('pseo_id', 'route')) as { pseo_id: number; route: string }[];
		for (const row of rows) found.push({ pseoId: Number(row.pseo_id), route: row.route });
	}
	return found;
}

/** Which of these posts were last written by generation `jobId` (a regeneration or a refresh that already stored their pages). */
export async function rewrittenBy(knex: Knex, postIds: readonly number[], jobId: number): Promise<Set<number>> {
	const rewritten = new Set<number>();
	for (let i = 0; i < postIds.length; i += ROUTES_PER_QUERY) {
		const rows = (await knex(POSTS).whereIn('id', postIds.slice(i, i + ROUTES_PER_QUERY)).where('generation_id', jobId).select('id')) as { id: number }[];
		for (const row of rows) rewritten.add(Number(row.id));
	}
	return rewritten;
}

/** The id of the website's post of each of these routes (routes without a post are absent). */
export async function postIdsByRoute(knex: Knex, pseoId: number, routes: readonly string[]): Promise<Map<string, number>> {
	const ids = new Map<string, number>();
	for (let i = 0; i < routes.length; i += ROUTES_PER_QUERY) {
		const rows = (await knex(POSTS).where('pseo_id', pseoId).whereIn('route', routes.slice(i, i + ROUTES_PER_QUERY)).select('id', 'route')) as { id: number; route: string }[];
		for (const row of rows) ids.set(row.route, Number(row.id));
	}
	return ids;
}

/**
 * The ids of a website's posts last written by generation `jobId` that a publishing target has (a remote id, or a
 * version delivered), in id order, leaving out retired posts and those the quality gate failed: what a refresh
 * publishes again.
 */
export async function publishedPostsRewrittenBy(knex: Knex, pseoId: number, jobId: number): Promise<number[]> {
	const rows = (await knex(POSTS)
		.where({ pseo_id: pseoId, generation_id: jobId, retired: false })
		.andWhere((q) => q.whereNotNull('remote_id').orWhereNotNull('published_hash'))
		.andWhere((q) => q.whereNull('quality_status').orWhereNot('quality_status', 'fail'))
		.orderBy('id')
		.select('id')) as { id: number }[];
	return rows.map((row) => Number(row.id));
}

/** The routes of a website's stale posts that are not retired: what a refresh rewrites. */
export async function staleRoutes(knex: Knex, pseoId: number): Promise<string[]> {
	const rows = (await knex(POSTS).where({ pseo_id: pseoId, stale: true, retired: false }).select('route')) as { route: string }[];
	return rows.map((row) => row.route);
}

/** What a regeneration needs of a post: its website, owner, route and title; null when it does not exist. */
export async function readPostForRegeneration(
	knex: Knex,
	postId: number,
): Promise<{ id: number; pseoId: number; userId: string | null; route: string; title: string } | null> {
	const row = (await knex(POSTS).where('id', postId).first('id', 'pseo_id', 'user_id', 'route', 'title')) as
		| { id: number; pseo_id: number; user_id: string | null; route: string; title: string | null }
		| undefined;
	if (!row) return null;
	return { id: Number(row.id), pseoId: Number(row.pseo_id), userId: row.user_id ?? null, route: row.route, title: row.title ?? row.route };
}

/** Every column of a post, as stored: the version a regeneration keeps as a revision. */
export async function readPostRow(knex: Knex, postId: number): Promise<Record<string, unknown> | null> {
	return ((await knex(POSTS).where('id', postId).first()) as Record<string, unknown> | undefined) ?? null;
}

/**
 * Marks the posts of these routes of a website stale, inside the transaction that changed their plan pages' data:
 * `stale_since` is when their data first changed after they were written, so a post already stale keeps it.
 */
export async function markPostsStale(trx: Knex, pseoId: number, routes: readonly string[], now: Date | number): Promise<void> {
	for (let i = 0; i < routes.length; i += ROUTES_PER_QUERY) {
		await trx(POSTS)
			.where({ pseo_id: pseoId, stale: false })
			.whereIn('route', routes.slice(i, i + ROUTES_PER_QUERY))
			.update({ stale: true, stale_since: now });
	}
}

/**
 * Marks stale the posts of these pages of a website that were written from other facts than the pages hold now (an
 * editor changed a page's facts in the app or through the items API); returns the routes marked. A post whose facts
 * are the page's again (an edit undone) is left as it is: a refresh or a sync decides that.
 */
export async function markStaleWhereFactsChanged(knex: Knex, pseoId: number, pages: readonly { route: string; facts: Facts | null }[], now: Date | number): Promise<string[]> {
	const current = new Map(pages.map((page) => [page.route, page.facts]));
	const stale: string[] = [];
	for (let i = 0; i < pages.length; i += ROUTES_PER_QUERY) {
		const routes = pages.slice(i, i + ROUTES_PER_QUERY).map((page) => page.route);
		const posts = (await knex(POSTS).where({ pseo_id: pseoId, stale: false }).whereIn('route', routes).select('route', 'facts')) as { route: string; facts: unknown }[];
		for (const post of posts) if (!sameFacts(factsOf(post.facts), current.get(post.route))) stale.push(post.route);
	}
	await markPostsStale(knex, pseoId, stale, now);
	return stale;
}

/**
 * Marks the posts of these routes of a website retired (their plan pages were retired: no row of their source's data
 * produces them any more) or back (`retired: false`: their rows came back), inside the transaction that changed the
 * pages.
 */
export async function setPostsRetired(trx: Knex.Transaction, pseoId: number, routes: readonly string[], retired: boolean): Promise<void> {
	for (let i = 0; i < routes.length; i += ROUTES_PER_QUERY) {
		await trx(POSTS)
			.where({ pseo_id: pseoId, retired: !retired })
			.whereIn('route', routes.slice(i, i + ROUTES_PER_QUERY))
			.update({ retired });
	}
}

/** The columns of a post that a regeneration rewrites. */
export function rewrittenFields(content: PageContent, generationId: number): Record<string, unknown> {
	return {
		generation_id: generationId,
		title: content.title,
		meta_title: content.meta_title,
		meta_description: content.meta_description,
		h1: content.h1,
		body: content.body,
		faq: content.faq ?? [],
		internal_links: content.internal_links ?? [],
		...qualityColumns(content.quality),
		facts: content.facts ?? null,
		structured_data: content.structured_data ?? null,
	};
}

/** The quality columns of a post; a page without a verdict leaves them empty. */
function qualityColumns(quality: PostQuality | undefined): Record<string, unknown> {
	return {
		quality_status: quality?.status ?? null,
		quality_score: quality?.score ?? null,
		quality_issues: quality ? quality.issues : null,
		quality_signature: quality?.signature ?? null,
	};
}

/**
 * Inserts posts with multi-row statements (one statement per row made ingesting a big batch slow) and returns
 * the routes that already had a post: another writer stored them first, and the (pseo_id, route) key kept them out.
 */
export async function insertPosts(trx: Knex.Transaction, posts: readonly NewPost[], now: Date | number): Promise<Set<string>> {
	if (posts.length === 0) return new Set();
	if (vendorOf(trx) === 'postgres') return insertPostsAtOnce(trx, posts, now);
	// Elsewhere, a statement that hits the key is undone and its rows are inserted one by one.
	const duplicates = new Set<string>();
	for (let i = 0; i < posts.length; i += POSTS_PER_INSERT) {
		const slice = posts.slice(i, i + POSTS_PER_INSERT);
		try {
			await insertAtomically(trx, slice.map((post) => postRow(post, now, JSON.stringify)));
			continue;
		} catch (error) {
			if (!isUniqueViolation(error)) throw error;
		}
		for (const post of slice) {
			try {
				await insertAtomically(trx, [postRow(post, now, JSON.stringify)]);
			} catch (error) {
				if (!isUniqueViolation(error)) throw error;
				duplicates.add(post.route);
			}
		}
	}
	return duplicates;
}

/**
 * PostgreSQL: a whole chunk of posts in one statement. The rows go as one JSON document, which
 * json_populate_recordset reads with the table's own column types, and the (pseo_id, route) key is handled by
 * ON CONFLICT DO NOTHING, whose RETURNING names the routes stored. An ingest's chunk of 250 posts took 5 statements
 * of 950 bound values, each inside a savepoint: 15 round trips, each waiting for its turn on an event loop busy
 * with the quality gate of the next chunk, and 4,750 values for Knex to compile and node-postgres to bind.
 *
 * The conflict has no target on purpose: `ON CONFLICT (pseo_id, route)` fails (42P10) unless that key is a valid
 * unique index, which a start-up that could not build it, or another instance building it right now, leaves
 * absent; without a target the statement skips whatever any valid unique index refuses, and stores the rows as
 * the sliced path would when there is none. A savepoint around the statement to catch 42P10 cost about 10 % of the
 * ingest rate (30,000-page scale runs: 1,430 pages/s without it, 1,261 and 1,313 with it).
 */
async function insertPostsAtOnce(trx: Knex.Transaction, posts: readonly NewPost[], now: Date | number): Promise<Set<string>> {
	const rows = posts.map((post) => postRow(post, now, (value) => value));
	const columns = Object.keys(rows[0]!);
	const list = columns.map(() => '??').join(', ');
	const result = (await trx.raw(
		`INSERT INTO ?? (${list}) SELECT ${list} FROM json_populate_recordset(NULL::??, ?::json) ON CONFLICT DO NOTHING RETURNING route`,
		[POSTS, ...columns, ...columns, POSTS, jsonParameter(rows)],
	)) as { rows: { route: string }[] };
	const stored = new Set(result.rows.map((row) => row.route));
	return new Set(posts.filter((post) => !stored.has(post.route)).map((post) => post.route));
}

/**
 * One INSERT that applies whole or not at all and leaves the transaction usable. SQLite undoes just the failed
 * statement; PostgreSQL aborts the whole transaction on an error, so there it runs inside a savepoint.
 */
async function insertAtomically(trx: Knex.Transaction, rows: Record<string, unknown>[]): Promise<void> {
	if (vendorOf(trx) === 'sqlite') await trx(POSTS).insert(rows);
	else await trx.transaction((savepoint) => savepoint(POSTS).insert(rows));
}

/** A post's row; `json` writes the JSON columns (a string for a bound value, the value itself inside a JSON document). */
function postRow(post: NewPost, now: Date | number, json: (value: unknown) => unknown): Record<string, unknown> {
	const { content } = post;
	return {
		pseo_id: post.pseo_id,
		generation_id: post.generation_id,
		user_id: post.user_id,
		status: 'draft',
		route: post.route,
		language: post.language,
		title: content.title,
		meta_title: content.meta_title,
		meta_description: content.meta_description,
		h1: content.h1,
		body: content.body,
		faq: json(content.faq ?? []),
		internal_links: json(content.internal_links ?? []),
		...qualityColumns(content.quality),
		quality_issues: content.quality ? json(content.quality.issues) : null,
		facts: content.facts ? json(content.facts) : null,
		structured_data: content.structured_data ? json(content.structured_data) : null,
		date_created: now,
		date_updated: now,
	};
}
