import { expect, it } from 'vitest';
import { describeOnVendors, insertPendingJob, insertUser, insertWebsite, silentLogger } from '../../test/support/db-under-test.ts';
import { LEDGER_TABLE } from '../ledger/token-ledger.ts';
import { runCancel } from './end-job.ts';
import { JOB_ROUTES } from './job-route-store.ts';
import { claimJob, JOBS, readJobHead, recordOutcomes } from './job-store.ts';

/*
 * A cancel walks a job's route rows a page of 1,000 at a time: every route not yet settled, in every page, fails as
 * `cancelled` and is refunded once; routes already created or failed keep their outcome.
 */
describeOnVendors('cancel runner', (database) => {
	it('cancels every unsettled route of a job of several pages of routes, and leaves the settled ones as they are', async () => {
		const knex = database().knex;
		const userId = await insertUser(knex, 100_000);
		const pseoId = await insertWebsite(knex, userId);
		const routes = Array.from({ length: 2_500 }, (_, i) => `/r${i}`);
		const id = await insertPendingJob(knex, { userId, pseoId, routes });
		expect(await claimJob(knex, id, 'w', 60_000, silentLogger)).toBe(true);
		const head = (await readJobHead(knex, id))!;
		const content = { title: 'T', meta_title: null, meta_description: null, h1: null, body: 'Body.', faq: [], internal_links: [] };
		await recordOutcomes(knex, head, 'w', [{ route: '/r999', content }, { route: '/r1000', error: 'bad output' }, { route: '/r2499', content }], silentLogger);

		const status = await runCancel(head, { database: knex, logger: silentLogger, worker: 'w', provider: { unavailable: 'none' }, batchMode: false });
		expect(status).toBe('failed');
		const job = (await knex(JOBS).where('id', id).first('created_count', 'failed_count')) as { created_count: number; failed_count: number };
		expect({ created: Number(job.created_count), failed: Number(job.failed_count) }).toEqual({ created: 2, failed: 2_498 });
		const states = (await knex(JOB_ROUTES).where('generation_id', id).select('route', 'state', 'error')) as { route: string; state: string; error: string | null }[];
		const byRoute = new Map(states.map((row) => [row.route, row]));
		expect(byRoute.get('/r999')).toMatchObject({ state: 'created' });
		expect(byRoute.get('/r2499')).toMatchObject({ state: 'created' });
		expect(byRoute.get('/r1000')).toMatchObject({ state: 'failed', error: 'bad output' });
		const cancelled = states.filter((row) => row.error === 'cancelled');
		expect(cancelled).toHaveLength(2_497);
		expect(cancelled.every((row) => row.state === 'failed')).toBe(true);
		// One refund per failed route: the bad output's and each cancelled one's.
		const refunds = await knex(LEDGER_TABLE).where({ user_id: userId, reason: 'refund' }).count({ n: '*' }).first();
		expect(Number(refunds!['n'])).toBe(2_498);
	});
});
