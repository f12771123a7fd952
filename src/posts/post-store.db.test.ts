import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { describeOnVendors, insertPendingJob, insertUser, insertWebsite, openTestDatabase, type TestDatabase, vendorAvailable } from '../../test/support/db-under-test.ts';
import { dbTimestamp, jsonFromDb } from '../shared/database.ts';
import { insertPosts, POSTS, type NewPost } from './post-store.ts';

/** A post of a job, every column set, with text that needs escaping. */
const post = (pseoId: number, userId: string, jobId: number, route: string, body: string): NewPost => ({
	pseo_id: pseoId,
	generation_id: jobId,
	user_id: userId,
	route,
	language: 'en-GB',
	content: {
		title: `Title ${route}`,
		meta_title: 'Meta title',
		meta_description: null,
		h1: 'Heading',
		body,
		faq: [{ question: 'Why "quotes"?', answer: 'Because\nlines.' }],
		internal_links: [{ route: '/other', anchor: 'Other' }],
		quality: { status: 'warn', score: 90, issues: [{ check: 'meta_title', detail: '10 characters', severity: 'warn' }], signature: 'c2ln' },
	},
});

/*
 * Storing a chunk of generated posts: one statement on PostgreSQL (a JSON document of rows, ON CONFLICT DO NOTHING),
 * multi-row inserts with a per-row fallback elsewhere. Either way every column reads back as written, and the
 * routes that already had a post are reported and left as they were.
 */
describeOnVendors('insertPosts', (database, vendor) => {
	it('stores every column, and reports the routes that already had a post without touching them', async () => {
		const userId = await insertUser(database().knex, 0);
		const pseoId = await insertWebsite(database().knex, userId);
		const jobId = await insertPendingJob(database().knex, { userId, pseoId, routes: ['/a'] });
		const now = new Date('2026-03-04T05:06:07.000Z');
		const first = await database().knex.transaction((trx) => insertPosts(trx, [post(pseoId, userId, jobId, '/taken', 'First body.')], dbTimestamp(trx, now)));
		expect(first).toEqual(new Set());

		const later = new Date('2026-03-05T00:00:00.000Z');
		const bodies = ['Plain body.', 'Lone \ud800 surrogate and an emoji 😀.', `${'long '.repeat(2_000)}end`];
		const duplicates = await database().knex.transaction((trx) =>
			insertPosts(
				trx,
				[post(pseoId, userId, jobId, '/a', bodies[0]!), post(pseoId, userId, jobId, '/taken', 'Second body.'), post(pseoId, userId, jobId, '/b', bodies[1]!), post(pseoId, userId, jobId, '/c', bodies[2]!)],
				dbTimestamp(trx, later),
			),
		);
		expect(duplicates).toEqual(new Set(['/taken']));

		const rows = (await database().knex(POSTS).where('pseo_id', pseoId).orderBy('route')) as Record<string, unknown>[];
		expect(rows.map((row) => row['route'])).toEqual(['/a', '/b', '/c', '/taken']);
		const byRoute = new Map(rows.map((row) => [row['route'], row]));
		expect(byRoute.get('/taken')!['body']).toBe('First body.');
		expect(new Date(byRoute.get('/taken')!['date_created'] as string).toISOString()).toBe(now.toISOString());
		// A lone surrogate is stored as U+FFFD, as a bound string always was.
		expect(byRoute.get('/b')!['body']).toBe('Lone \ufffd surrogate and an emoji 😀.');
		expect(byRoute.get('/c')!['body']).toBe(bodies[2]);
		const a = byRoute.get('/a')!;
		expect(a).toMatchObject({ status: 'draft', language: 'en-GB', title: 'Title /a', meta_title: 'Meta title', meta_description: null, h1: 'Heading', body: 'Plain body.' });
		expect(a).toMatchObject({ quality_status: 'warn', quality_score: 90, quality_signature: 'c2ln', user_id: userId });
		expect(jsonFromDb(a['faq'], null)).toEqual([{ question: 'Why "quotes"?', answer: 'Because\nlines.' }]);
		expect(jsonFromDb(a['internal_links'], null)).toEqual([{ route: '/other', anchor: 'Other' }]);
		expect(jsonFromDb(a['quality_issues'], null)).toEqual([{ check: 'meta_title', detail: '10 characters', severity: 'warn' }]);
		expect(new Date(a['date_created'] as string).toISOString()).toBe(later.toISOString());
		// The JSON columns hold arrays, not a JSON string of one (which the reads above would parse all the same).
		const typeOf = vendor === 'postgres' ? 'json_typeof(??)' : 'lower(json_type(??))';
		const types = (await database().knex(POSTS).where({ pseo_id: pseoId, route: '/a' }).first(
			database().knex.raw(`${typeOf} AS faq`, ['faq']),
			database().knex.raw(`${typeOf} AS links`, ['internal_links']),
			database().knex.raw(`${typeOf} AS issues`, ['quality_issues']),
		)) as Record<string, string>;
		expect(types).toEqual({ faq: 'array', links: 'array', issues: 'array' });
	});
}, 2);

/*
 * PostgreSQL only: its one-statement insert names no conflict target, so it must work without the (pseo_id, route)
 * unique index (a start-up that could not build it yet). MariaDB cannot be in that state: the index serves the
 * website foreign key there, which refuses its drop.
 */
describe.skipIf(!vendorAvailable('postgres'))('insertPosts on postgres without its unique index', () => {
	let db: TestDatabase;
	beforeAll(async () => {
		db = await openTestDatabase('postgres', 2);
	});
	afterAll(async () => db?.dispose());

	it('stores posts when the (pseo_id, route) unique index is missing, as before the index existed', async () => {
		const userId = await insertUser(db.knex, 0);
		const pseoId = await insertWebsite(db.knex, userId);
		const jobId = await insertPendingJob(db.knex, { userId, pseoId, routes: ['/a'] });
		// `ON CONFLICT (pseo_id, route)` would have no arbiter without it (PostgreSQL answers 42P10).
		await db.knex.raw('DROP INDEX pseo_posts_pseo_route_unique');
		try {
			const duplicates = await db.knex.transaction((trx) =>
				insertPosts(trx, [post(pseoId, userId, jobId, '/x', 'Body x.'), post(pseoId, userId, jobId, '/y', 'Body y.')], dbTimestamp(trx)),
			);
			expect(duplicates).toEqual(new Set());
			const rows = (await db.knex(POSTS).where('pseo_id', pseoId).orderBy('route').select('route', 'body')) as { route: string; body: string }[];
			expect(rows).toEqual([
				{ route: '/x', body: 'Body x.' },
				{ route: '/y', body: 'Body y.' },
			]);
		} finally {
			await db.knex.raw('CREATE UNIQUE INDEX pseo_posts_pseo_route_unique ON ?? (pseo_id, route)', [POSTS]);
		}
	});
});
