import PQueue from 'p-queue';
import { expect, it } from 'vitest';
import { describeOnVendors, insertPendingJob, insertUser, insertWebsite, silentLogger } from '../../test/support/db-under-test.ts';
import { LEDGER_TABLE } from '../ledger/token-ledger.ts';
import { JOB_ROUTES } from './job-route-store.ts';
import { claimJob, JOBS, readJobHead, recordOutcomes } from './job-store.ts';
import { runPages } from './page-runner.ts';
import { walkJobRoutes } from './route-walk.ts';

/*
 * Jobs are walked through their route rows a page of 1,000 at a time: a range of positions comes back whole, in
 * order, each page with the routes of it already settled; a chat job without a provider fails every unsettled
 * route of every page, once each, and keeps the outcomes already stored.
 */
describeOnVendors('route walk', (database) => {
	const content = { title: 'T', meta_title: null, meta_description: null, h1: null, body: 'Body.', faq: [], internal_links: [] };

	it('walks a range of positions page by page, in order, with the settled routes of each page', async () => {
		const knex = database().knex;
		const userId = await insertUser(knex, 100_000);
		const pseoId = await insertWebsite(knex, userId);
		const id = await insertPendingJob(knex, { userId, pseoId, routes: Array.from({ length: 2_500 }, (_, i) => `/w${i}`) });
		expect(await claimJob(knex, id, 'w', 60_000, silentLogger)).toBe(true);
		const head = (await readJobHead(knex, id))!;
		await recordOutcomes(knex, head, 'w', [{ route: '/w5', content }, { route: '/w1200', error: 'bad output' }], silentLogger);

		const pages = [];
		for await (const page of walkJobRoutes(knex, head, 3, 2_100)) pages.push(page);
		expect(pages.map((page) => page.routes.length)).toEqual([1000, 1000, 97]);
		expect(pages.flatMap((page) => page.routes.map((item) => item.position))).toEqual(Array.from({ length: 2_097 }, (_, i) => i + 3));
		expect(pages.map((page) => [...page.settled].sort())).toEqual([['/w5'], ['/w1200'], []]);
	});

	it('fails every unsettled route of a chat job without a provider, refunded once each, and keeps the stored outcomes', async () => {
		const knex = database().knex;
		const userId = await insertUser(knex, 100_000);
		const pseoId = await insertWebsite(knex, userId);
		const id = await insertPendingJob(knex, { userId, pseoId, mode: 'on_demand', routes: Array.from({ length: 2_500 }, (_, i) => `/c${i}`) });
		expect(await claimJob(knex, id, 'w', 60_000, silentLogger)).toBe(true);
		const head = (await readJobHead(knex, id))!;
		await recordOutcomes(knex, head, 'w', [{ route: '/c999', content }, { route: '/c2499', error: 'bad output' }], silentLogger);

		const deps = {
			database: knex,
			logger: silentLogger,
			worker: 'w',
			provider: { unavailable: 'OPENAI_API_KEY is not set.' },
			queue: new PQueue({ concurrency: 2 }),
			signal: new AbortController().signal,
			quality: { minWords: 0, maxSimilarity: 1 },
		};
		await runPages(head, deps);

		const job = (await knex(JOBS).where('id', id).first('status', 'error', 'created_count', 'failed_count')) as Record<string, unknown>;
		expect({ ...job, created_count: Number(job['created_count']), failed_count: Number(job['failed_count']) }).toEqual({
			status: 'failed',
			error: 'OPENAI_API_KEY is not set.',
			created_count: 1,
			failed_count: 2_499,
		});
		const failed = (await knex(JOB_ROUTES).where({ generation_id: id, state: 'failed' }).select('route', 'error')) as { route: string; error: string }[];
		expect(failed.filter((row) => row.error === 'OPENAI_API_KEY is not set.')).toHaveLength(2_498);
		expect(failed.find((row) => row.route === '/c2499')?.error).toBe('bad output');
		const refunds = await knex(LEDGER_TABLE).where({ user_id: userId, reason: 'refund' }).count({ n: '*' }).first();
		expect(Number(refunds!['n'])).toBe(2_499);
	});
});
