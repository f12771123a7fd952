import type { Knex } from 'knex';
import { dbTimestamp } from '../shared/database.ts';
import { POSTS } from './post-store.ts';
import { factsOf, type Facts } from '../shared/facts.ts';
import { jsonValue } from '../shared/json-value.ts';

/*
 * The publishing state of posts: which posts a publication takes, what it reads of them, and the remote post each
 * became (remote_id, remote_url, published_hash, date_published), written in the publication's own transaction.
 */

export interface PostForPublishing {
	id: number;
	pseoId: number;
	route: string;
	title: string;
	metaTitle: string | null;
	metaDescription: string | null;
	h1: string | null;
	body: string;
	faq: unknown;
	/** The facts the page was written from, which its data block shows; null without. */
	facts: Facts | null;
	/** Its schema.org JSON-LD as stored (posts/structured-data.ts); null for a post stored without one. */
	structuredData: unknown[] | null;
	remoteId: string | null;
	remoteUrl: string | null;
	publishedHash: string | null;
	/** Its plan page was retired by a sync (no row of its data produces it any more): never published, taken down. */
	retired: boolean;
}

const IDS_PER_QUERY = 500;

/**
 * The ids a publication takes, in id order: the listed ones (those of other websites or missing are returned in
 * `unknown`), or every post of the website except those the quality gate failed and the retired ones.
 */
export async function selectPostIds(knex: Knex, pseoId: number, listed: readonly number[] | null): Promise<{ ids: number[]; unknown: number[] }> {
	if (listed === null) {
		const rows = (await knex(POSTS)
			.where({ pseo_id: pseoId, retired: false })
			.andWhere((q) => q.whereNull('quality_status').orWhereNot('quality_status', 'fail'))
			.orderBy('id')
			.select('id')) as { id: number }[];
		return { ids: rows.map((row) => Number(row.id)), unknown: [] };
	}
	const found = new Set<number>();
	for (let i = 0; i < listed.length; i += IDS_PER_QUERY) {
		const rows = (await knex(POSTS).where('pseo_id', pseoId).whereIn('id', listed.slice(i, i + IDS_PER_QUERY)).select('id')) as { id: number }[];
		for (const row of rows) found.add(Number(row.id));
	}
	return { ids: [...found].sort((a, b) => a - b), unknown: listed.filter((id) => !found.has(id)) };
}

export async function readPostForPublishing(knex: Knex, postId: number): Promise<PostForPublishing | null> {
	const row = (await knex(POSTS).where('id', postId).first()) as Record<string, unknown> | undefined;
	if (!row) return null;
	const text = (field: string) => (row[field] === null || row[field] === undefined ? null : String(row[field]));
	let faq: unknown = row['faq'];
	if (typeof faq === 'string') {
		try {
			faq = JSON.parse(faq);
		} catch {
			faq = [];
		}
	}
	return {
		id: Number(row['id']),
		pseoId: Number(row['pseo_id']),
		route: String(row['route']),
		title: String(row['title'] ?? ''),
		metaTitle: text('meta_title'),
		metaDescription: text('meta_description'),
		h1: text('h1'),
		body: String(row['body'] ?? ''),
		faq,
		facts: factsOf(row['facts']),
		structuredData: jsonArray(row['structured_data']),
		remoteId: text('remote_id'),
		remoteUrl: text('remote_url'),
		publishedHash: text('published_hash'),
		retired: row['retired'] === true || row['retired'] === 1 || row['retired'] === '1',
	};
}

/** A JSON column holding an array, as the database gives it back (text on some); null otherwise. */
function jsonArray(value: unknown): unknown[] | null {
	const parsed = jsonValue(value);
	return Array.isArray(parsed) && parsed.length > 0 ? parsed : null;
}

/** route → URL on the site, for every post of the website that has been published. */
export async function publishedUrls(knex: Knex, pseoId: number): Promise<Map<string, string>> {
	const rows = (await knex(POSTS).where('pseo_id', pseoId).whereNotNull('remote_url').select('route', 'remote_url')) as { route: string; remote_url: string }[];
	return new Map(rows.map((row) => [row.route, row.remote_url]));
}

/** The routes of a website's posts among `ids`. */
export async function routesOfPostIds(knex: Knex, pseoId: number, ids: readonly number[]): Promise<Set<string>> {
	const routes = new Set<string>();
	for (let i = 0; i < ids.length; i += IDS_PER_QUERY) {
		const rows = (await knex(POSTS).where('pseo_id', pseoId).whereIn('id', ids.slice(i, i + IDS_PER_QUERY)).select('route')) as { route: string }[];
		for (const row of rows) routes.add(row.route);
	}
	return routes;
}

/** Stores what the site now has of a post, in the caller's transaction. */
export async function markPublished(trx: Knex.Transaction, postId: number, remote: { remoteId: string | null; remoteUrl: string | null; hash: string }): Promise<void> {
	await trx(POSTS).where('id', postId).update({
		remote_id: remote.remoteId,
		remote_url: remote.remoteUrl,
		published_hash: remote.hash,
		date_published: dbTimestamp(trx),
	});
}

/**
 * Forgets where a website's posts were published: their remote ids belong to a site that is no longer the target.
 * Nothing is lost on the site; a later publication to it finds each post again by its marker.
 */
export async function forgetRemotePosts(knex: Knex, pseoId: number): Promise<void> {
	await knex(POSTS).where('pseo_id', pseoId).update({ remote_id: null, remote_url: null, published_hash: null });
}

/**
 * `published_hash` of a post taken down by the takedown publication `publicationId`: it never equals a version's
 * hash, so the next publication of the post (once its row is back) sends it again, and it names the takedown, so
 * that a webhook's delivery of a version sent before the takedown gets a new Idempotency-Key.
 */
function takenDownHash(publicationId: number): string {
	return `unpublished:${publicationId}`;
}

/** The takedown publication a stored `published_hash` names (takenDownHash), or null for a published version. */
export function takedownOf(publishedHash: string | null): number | null {
	const match = /^unpublished:(\d+)$/.exec(publishedHash ?? '');
	return match ? Number(match[1]) : null;
}

/**
 * The ids of a website's posts among `routes` that a publishing target has (a remote id, or a version delivered),
 * in id order: what a takedown takes down.
 */
export async function publishedPostIds(knex: Knex, pseoId: number, routes: readonly string[]): Promise<number[]> {
	const ids: number[] = [];
	for (let i = 0; i < routes.length; i += IDS_PER_QUERY) {
		const rows = (await knex(POSTS)
			.where('pseo_id', pseoId)
			.whereIn('route', routes.slice(i, i + IDS_PER_QUERY))
			.andWhere((q) => q.whereNotNull('remote_id').orWhere((p) => p.whereNotNull('published_hash').andWhere('published_hash', 'not like', 'unpublished:%')))
			.select('id')) as { id: number }[];
		ids.push(...rows.map((row) => Number(row.id)));
	}
	return ids.sort((a, b) => a - b);
}

/**
 * Stores that the site no longer shows a post (a takedown): its URL is forgotten, so that no page links to it; its
 * remote id is kept, so that the post is published again in place when its row comes back.
 */
export async function markTakenDown(trx: Knex.Transaction, postId: number, publicationId: number): Promise<void> {
	await trx(POSTS).where('id', postId).update({ remote_url: null, published_hash: takenDownHash(publicationId) });
}
