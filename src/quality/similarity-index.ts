import type { Knex } from 'knex';
import { readSignatures } from '../posts/post-store.ts';
import { bandKeys, decodeSignature, similarity } from './minhash.ts';

/*
 * The owner of `pseo_post_bands`: the locality-sensitive-hashing index of posts' MinHash signatures, one row per
 * band of a post, keyed by website and route like the post itself. A lookup reads the routes that share a band
 * with a page through the (pseo_id, band_key) index and compares only those few signatures, so the cost of the
 * near-duplicate check does not grow with the number of posts. Rows of a deleted post stay until its route is
 * indexed again; they are harmless, because a candidate counts only while its post exists.
 */

export const BANDS_TABLE = 'pseo_post_bands';

/** Candidates compared per lookup: those sharing the most bands, which are the most similar ones. */
const CANDIDATES = 16;
/** Rows per INSERT statement (3 bound values each): well under every vendor's limit. */
const ROWS_PER_INSERT = 300;
/** Routes per `whereIn`: keeps every statement under SQLite's bound-variable limit. */
const ROUTES_PER_QUERY = 500;

/** A page to index: its route and its encoded signature (null: nothing to index). */
export interface IndexedPage {
	route: string;
	signature: string | null;
}

/** Replaces the band rows of these routes of a website, inside the caller's transaction (the one storing the posts). */
export async function indexPages(trx: Knex.Transaction, pseoId: number, pages: readonly IndexedPage[]): Promise<void> {
	if (pages.length === 0) return;
	const routes = pages.map((page) => page.route);
	for (let i = 0; i < routes.length; i += ROUTES_PER_QUERY) {
		await trx(BANDS_TABLE).where('pseo_id', pseoId).whereIn('route', routes.slice(i, i + ROUTES_PER_QUERY)).delete();
	}
	const rows = pages.flatMap((page) => {
		const signature = decodeSignature(page.signature);
		return signature ? bandKeys(signature).map((band_key) => ({ pseo_id: pseoId, route: page.route, band_key })) : [];
	});
	for (let i = 0; i < rows.length; i += ROWS_PER_INSERT) await trx(BANDS_TABLE).insert(rows.slice(i, i + ROWS_PER_INSERT));
}

/**
 * The stored post of the website most similar to a signature, other than `ownRoute`, with its estimated
 * similarity; null when no post shares a band with it (similarity almost surely below 0.4).
 */
export async function nearestStoredPost(knex: Knex, pseoId: number, signature: Uint32Array, ownRoute: string): Promise<{ route: string; score: number } | null> {
	const rows = (await knex(BANDS_TABLE)
		.where('pseo_id', pseoId)
		.whereIn('band_key', bandKeys(signature))
		.whereNot('route', ownRoute)
		.groupBy('route')
		.select('route')
		.count({ shared: '*' })
		.orderBy('shared', 'desc')
		.limit(CANDIDATES)) as { route: string }[];
	if (rows.length === 0) return null;
	const stored = await readSignatures(
		knex,
		pseoId,
		rows.map((row) => row.route),
	);
	let best: { route: string; score: number } | null = null;
	for (const [route, encoded] of stored) {
		const other = decodeSignature(encoded);
		if (!other) continue;
		const score = similarity(signature, other);
		if (!best || score > best.score) best = { route, score };
	}
	return best;
}
