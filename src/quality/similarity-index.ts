import type { Knex } from 'knex';
import { readSignatures } from '../posts/post-store.ts';
import { arrayLiteral, probeRows, vendorOf } from '../shared/database.ts';
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
	const rows = pages.flatMap((page) => {
		const signature = decodeSignature(page.signature);
		return signature ? bandKeys(signature).map((band_key) => ({ route: page.route, band_key })) : [];
	});
	if (vendorOf(trx) === 'postgres') {
		// Two statements whatever the chunk's size, each with two array parameters: a chunk of 250 pages writes
		// 5,000 band rows, which as VALUES lists took 17 statements and 15,000 bound parameters to parse.
		await trx.raw('DELETE FROM ?? WHERE ?? = ? AND ?? = ANY(?::text[])', [BANDS_TABLE, 'pseo_id', pseoId, 'route', arrayLiteral(routes)]);
		if (rows.length === 0) return;
		await trx.raw('INSERT INTO ?? (??, ??, ??) SELECT ?, unnest(?::text[]), unnest(?::text[])', [
			BANDS_TABLE,
			'pseo_id',
			'route',
			'band_key',
			pseoId,
			arrayLiteral(rows.map((row) => row.route)),
			arrayLiteral(rows.map((row) => row.band_key)),
		]);
		return;
	}
	for (let i = 0; i < routes.length; i += ROUTES_PER_QUERY) {
		await trx(BANDS_TABLE).where('pseo_id', pseoId).whereIn('route', routes.slice(i, i + ROUTES_PER_QUERY)).delete();
	}
	for (let i = 0; i < rows.length; i += ROWS_PER_INSERT) await insertRows(trx, pseoId, rows.slice(i, i + ROWS_PER_INSERT));
}

/**
 * One multi-row INSERT ... VALUES. Knex writes SQLite's multi-row inserts as a UNION ALL of SELECTs, which is
 * slower to parse and capped at 500 terms; every vendor we support (SQLite 3.7.11 and later, PostgreSQL, MySQL,
 * MariaDB) takes a plain VALUES list, and these rows are three plain columns.
 */
async function insertRows(trx: Knex.Transaction, pseoId: number, rows: readonly { route: string; band_key: string }[]): Promise<void> {
	const values = rows.map(() => '(?, ?, ?)').join(', ');
	await trx.raw(`INSERT INTO ?? (??, ??, ??) VALUES ${values}`, [BANDS_TABLE, 'pseo_id', 'route', 'band_key', ...rows.flatMap((row) => [pseoId, row.route, row.band_key])]);
}

/** Band keys per `whereIn`: keeps every statement under SQLite's bound-variable limit. */
const KEYS_PER_QUERY = 500;

/** PostgreSQL's lookup of a website's band rows with one of `keys`: one index probe per key (shared/database.ts). */
export function bandLookup(knex: Knex, pseoId: number, keys: readonly string[]): Knex.Raw {
	return probeRows(knex, BANDS_TABLE, pseoId, 'band_key', keys, ['route', 'band_key']);
}

/** The band rows of a website with one of `keys`: in one query with an array parameter on PostgreSQL, else in slices. */
async function* rowsWithKeys(knex: Knex, pseoId: number, keys: readonly string[]): AsyncGenerator<{ route: string; band_key: string }[]> {
	if (vendorOf(knex) === 'postgres') {
		yield ((await bandLookup(knex, pseoId, keys)) as { rows: { route: string; band_key: string }[] }).rows;
		return;
	}
	for (let i = 0; i < keys.length; i += KEYS_PER_QUERY) {
		yield (await knex(BANDS_TABLE)
			.where('pseo_id', pseoId)
			.whereIn('band_key', keys.slice(i, i + KEYS_PER_QUERY))
			.select('route', 'band_key')) as { route: string; band_key: string }[];
	}
}

/** A page to look up: its route (never its own match) and its signature. */
export interface LookedUpPage {
	route: string;
	signature: Uint32Array;
}

/**
 * For each page, the stored post of the website most similar to it, other than its own route, with the estimated
 * similarity; absent when no post shares a band with it (similarity almost surely below 0.4). One query reads
 * the bands of every page and one the signatures of every candidate, so a chunk of pages costs two queries.
 */
export async function nearestStoredPosts(knex: Knex, pseoId: number, pages: readonly LookedUpPage[]): Promise<Map<string, { route: string; score: number }>> {
	const wanting = new Map<string, number[]>();
	pages.forEach((page, index) => {
		for (const key of bandKeys(page.signature)) {
			const list = wanting.get(key);
			if (list) list.push(index);
			else wanting.set(key, [index]);
		}
	});
	const shared = pages.map(() => new Map<string, number>());
	for await (const rows of rowsWithKeys(knex, pseoId, [...wanting.keys()])) {
		for (const row of rows) {
			for (const index of wanting.get(row.band_key) ?? []) {
				if (row.route === pages[index]!.route) continue;
				const counts = shared[index]!;
				counts.set(row.route, (counts.get(row.route) ?? 0) + 1);
			}
		}
	}
	const candidates = shared.map((counts) => [...counts].sort((a, b) => b[1] - a[1]).slice(0, CANDIDATES).map(([route]) => route));
	const stored = await readSignatures(knex, pseoId, [...new Set(candidates.flat())]);
	const decoded = new Map<string, Uint32Array>();
	for (const [route, encoded] of stored) {
		const signature = decodeSignature(encoded);
		if (signature) decoded.set(route, signature);
	}
	const nearest = new Map<string, { route: string; score: number }>();
	pages.forEach((page, index) => {
		for (const route of candidates[index]!) {
			const other = decoded.get(route);
			if (!other) continue;
			const score = similarity(page.signature, other);
			const best = nearest.get(page.route);
			if (!best || score > best.score) nearest.set(page.route, { route, score });
		}
	});
	return nearest;
}
