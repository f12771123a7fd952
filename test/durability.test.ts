import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startFakeProvider, type FakeProvider } from './support/fake-provider/server.ts';
import {
	adminItems,
	balanceOf,
	call,
	eventually,
	ledgerOf,
	planPages,
	plannedWebsite,
	waitForJob,
} from './support/api.ts';
import { startDirectus, type DirectusInstance } from './support/directus.ts';
import { LEGS, legAvailable } from './support/legs.ts';

const BULK = '/pseo-endpoints/trigger/bulk-generation';
const ON_DEMAND = '/pseo-endpoints/trigger/on-demand-generation';

const CONCURRENT = { PSEO_BULK_MODE: 'concurrent' };
const BATCH = { PSEO_BULK_MODE: 'batch' };

const planned = (directus: DirectusInstance, balance: number, pages = 30) => plannedWebsite(directus, balance, pages);

function sameEnv(a: Readonly<Record<string, string>>, b: Readonly<Record<string, string>>): boolean {
	const keys = Object.keys(a);
	return keys.length === Object.keys(b).length && keys.every((key) => b[key] === a[key]);
}

async function jobRow(directus: DirectusInstance, id: number): Promise<Record<string, any>> {
	const [row] = await adminItems(directus, 'pseo_generations', `filter[id][_eq]=${id}`);
	return row;
}

/** Posts of a website: one per route, whatever happened. */
async function expectOnePostPerRoute(directus: DirectusInstance, pseoId: number, count: number): Promise<void> {
	const posts = await adminItems(directus, 'pseo_posts', `filter[pseo_id][_eq]=${pseoId}`);
	const routes = posts.map((post) => post.route);
	expect(new Set(routes).size).toBe(routes.length);
	expect(routes).toHaveLength(count);
	const [website] = await adminItems(directus, 'pseo', `filter[id][_eq]=${pseoId}`);
	expect(website.post_counts_total).toBe(count);
}

describe.each(LEGS)('durability on %s', (leg) => {
	describe.skipIf(!legAvailable(leg))(`${leg}`, () => {
		let fake: FakeProvider;
		let directus: DirectusInstance;
		let started = false;

		/**
		 * Each test states the environment it needs on top of the one below: Directus is restarted with it, and
		 * nothing a test set carries over into the next one, whatever the order. An instance already running with
		 * exactly that environment (the previous test restarted it so, and waited for its jobs) is kept: a restart
		 * would only start the same process again. The first test's start is the instance's first: a start with the
		 * base environment alone, stopped at once for the first test's, cost a boot a leg.
		 */
		const runWith = async (env: Record<string, string>) => {
			if (!started) {
				directus = await startDirectus({ leg, env: { OPENAI_BASE_URL: fake.url, PSEO_PROVIDER_BACKOFF_MS: '50', PSEO_CONCURRENCY: '2' }, startEnv: env });
				started = true;
				return;
			}
			if (directus.running() && sameEnv(directus.startedWith(), env)) return;
			await directus.stop();
			await directus.restart(env);
		};

		beforeAll(async () => {
			fake = await startFakeProvider();
		});
		afterEach((context) => {
			if (context.task.result?.state === 'fail') console.error(started ? directus.output().slice(-6000) : 'Directus was not started');
			fake.reset();
		});
		afterAll(async () => {
			await directus?.dispose();
			await fake?.close();
		});

		it('5 a concurrent-mode job survives a kill -9 mid-job: finished on restart, no duplicate, no double charge', async () => {
			await runWith(CONCURRENT);
			const { user, pseoId } = await planned(directus, 100, 10);
			// Mid-job, provably: two pages answered and stored, the next two out at the provider when the kill lands.
			fake.configure({ holdChat: true });
			const res = await call(directus, 'POST', BULK, { token: user.token, body: { pseo_id: pseoId, post_count: 10 } });
			expect(res.status).toBe(202);
			const id = res.body.generation_id;
			await eventually(async () => fake.heldChat() === 2, 30_000, 'two pages at the provider');
			expect(fake.releaseChat(2)).toBe(2);
			await eventually(async () => (await jobRow(directus, id)).created_count === 2, 30_000, 'two pages stored');
			await eventually(async () => fake.heldChat() === 2, 30_000, 'the next two pages at the provider');
			await directus.kill();
			fake.configure({ holdChat: false });
			await directus.restart(CONCURRENT);
			const job = await waitForJob(directus, user, id);
			expect(job).toMatchObject({ status: 'completed', created_count: 10, failed_count: 0, failed_routes: [] });
			await expectOnePostPerRoute(directus, pseoId, 10);
			const ledger = await ledgerOf(directus, user.id);
			expect(ledger.filter((row) => row.reason === 'charge').map((row) => row.amount)).toEqual([-50]);
			expect(ledger.filter((row) => row.reason === 'refund')).toEqual([]);
			expect(await balanceOf(directus, user.id)).toBe(50);
			// Only pages in flight at the kill may have been asked twice.
			for (const page of planPages(10)) expect(fake.countChat(page.route)).toBeLessThanOrEqual(2);
			expect(fake.countChat()).toBeLessThanOrEqual(12);
		});

		it('a long concurrent-mode job leaves the queue open: a page of another job triggered after it is written within a few of its pages', async () => {
			await runWith(CONCURRENT);
			const big = await planned(directus, 1000, 40);
			const small = await planned(directus, 100, 1);
			fake.configure({ holdChat: true });
			const bulk = await call(directus, 'POST', BULK, { token: big.user.token, body: { pseo_id: big.pseoId, post_count: 40 } });
			expect(bulk.status).toBe(202);
			await eventually(async () => fake.heldChat() === 2, 30_000, 'two pages of the bulk job at the provider');
			const one = await call(directus, 'POST', ON_DEMAND, { token: small.user.token, body: { pseo_id: small.pseoId, post_count: 1 } });
			expect(one.status).toBe(202);
			await eventually(async () => (await jobRow(directus, one.body.generation_id)).status === 'running', 30_000, 'the one-page job claimed');
			// Pages go through as the provider answers them; the bulk job's 38 others were queued before this one.
			await eventually(
				async () => {
					fake.releaseChat(fake.heldChat());
					return (await jobRow(directus, one.body.generation_id)).status === 'completed';
				},
				30_000,
				'the one-page job done',
			);
			// A few rounds of the queue went first (how many depends on when the one page joined it), never all 38.
			const meanwhile = await jobRow(directus, bulk.body.generation_id);
			expect(meanwhile.status).toBe('running');
			expect(meanwhile.created_count).toBeLessThanOrEqual(20);
			fake.configure({ holdChat: false });
			fake.releaseChat(fake.heldChat());
			expect(await waitForJob(directus, big.user, bulk.body.generation_id)).toMatchObject({ status: 'completed', created_count: 40 });
		});

		// The hand-back is one lease write, the same on every vendor; the test's two starts cost twelve seconds a leg.
		it.skipIf(leg !== 'postgres')('5 SIGTERM hands a running job back at once and the next start finishes it', async () => {
			// With a one-minute lease on both starts, only a job that was handed back can be resumed within the wait
			// below.
			const env = { ...CONCURRENT, PSEO_LEASE_MS: '60000' };
			await runWith(env);
			const { user, pseoId } = await planned(directus, 100, 6);
			// Mid-job, provably: one page stored, the next ones out at the provider when SIGTERM arrives.
			fake.configure({ holdChat: true });
			const res = await call(directus, 'POST', BULK, { token: user.token, body: { pseo_id: pseoId, post_count: 6 } });
			const id = res.body.generation_id;
			await eventually(async () => fake.heldChat() === 2, 30_000, 'two pages at the provider');
			expect(fake.releaseChat(1)).toBe(1);
			await eventually(async () => (await jobRow(directus, id)).created_count === 1, 30_000, 'one page stored');
			await eventually(async () => fake.heldChat() === 2, 30_000, 'the next page at the provider');
			expect(await directus.stop()).toBe(0);
			fake.configure({ holdChat: false });
			await directus.restart(env);
			const job = await waitForJob(directus, user, id, 20_000);
			expect(job).toMatchObject({ status: 'completed', created_count: 6 });
			await expectOnePostPerRoute(directus, pseoId, 6);
			expect(await balanceOf(directus, user.id)).toBe(70);
		});

		it('5 a held provider batch survives a kill -9 and is resumed by its stored id, never created twice', async () => {
			await runWith(BATCH);
			const { user, pseoId } = await planned(directus, 100, 5);
			fake.configure({ holdBatches: true });
			const res = await call(directus, 'POST', BULK, { token: user.token, body: { pseo_id: pseoId, post_count: 5 } });
			const id = res.body.generation_id;
			await eventually(async () => (await jobRow(directus, id)).batch_id, 30_000, 'a stored batch id');
			await directus.kill();
			await directus.restart(BATCH);
			// Polled again after the restart, still held.
			const polls = fake.requests.filter((entry) => entry.method === 'GET' && entry.path.startsWith('/v1/batches/')).length;
			await eventually(
				async () => fake.requests.filter((entry) => entry.method === 'GET' && entry.path.startsWith('/v1/batches/')).length > polls,
				30_000,
				'a poll after restart',
			);
			expect((await jobRow(directus, id)).status).toBe('running');
			fake.releaseBatches();
			const job = await waitForJob(directus, user, id);
			expect(job).toMatchObject({ status: 'completed', created_count: 5 });
			expect(fake.countBatchesCreated()).toBe(1);
			await expectOnePostPerRoute(directus, pseoId, 5);
			expect(await balanceOf(directus, user.id)).toBe(75);
		});

		it('4 an expired batch keeps its partial results, is sent once more for the rest, and refunds every page neither produced', async () => {
			await runWith(BATCH);
			const { user, pseoId } = await planned(directus, 100, 10);
			// Every batch expires with half its lines answered: 5 of the 10, then 2 of the 5 sent again.
			fake.configure({ batchEndState: 'expired', batchPartialFraction: 0.5 });
			const res = await call(directus, 'POST', BULK, { token: user.token, body: { pseo_id: pseoId, post_count: 10 } });
			const job = await waitForJob(directus, user, res.body.generation_id);
			expect(job['status']).toBe('failed');
			expect(job['created_count']).toBe(7);
			expect(job['failed_count']).toBe(3);
			expect(job['failed_routes']).toHaveLength(3);
			for (const failure of job['failed_routes']) expect(failure.error).toMatch(/expired/);
			expect(fake.countBatchesCreated()).toBe(2);
			await expectOnePostPerRoute(directus, pseoId, 7);
			expect(await balanceOf(directus, user.id)).toBe(100 - 50 + 15);
		});

		it('2 without OPENAI_API_KEY a job fails cleanly with its tokens back', async () => {
			await runWith({ OPENAI_API_KEY: '' });
			const { user, pseoId } = await planned(directus, 100, 3);
			const res = await call(directus, 'POST', ON_DEMAND, { token: user.token, body: { pseo_id: pseoId, post_count: 1 } });
			expect(res.status).toBe(202);
			const job = await waitForJob(directus, user, res.body.generation_id);
			expect(job).toMatchObject({ status: 'failed', created_count: 0, failed_count: 1 });
			expect(job['failed_routes'][0].error).toMatch(/OPENAI_API_KEY/);
			// The reason is on the job's record too, and nobody needs to look after a job that has ended.
			expect(job['last_error']).toMatchObject({ code: 'missing_api_key', attempts: 1 });
			expect(job['last_error'].message).toMatch(/OPENAI_API_KEY/);
			expect(job['attention']).toBe(false);
			expect(await balanceOf(directus, user.id)).toBe(100);
			expect(fake.countChat()).toBe(0);
		});
	});
});
