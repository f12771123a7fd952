import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startFakeProvider, type FakeProvider } from './support/fake-provider/server.ts';
import { balanceOf, call, createUser, eventually, ledgerOf, waitForJob } from './support/api.ts';
import { startDirectus, type DirectusInstance } from './support/directus.ts';
import { expectLedgerBalances, expectPostsOnce, jobRow, plannedSite, postedRoutes, waitForGiveUp } from './support/job-checks.ts';
import { LEGS, legAvailable } from './support/legs.ts';

const BULK = '/pseo-endpoints/trigger/bulk-generation';
const BATCH_PAGE_RATE = 5;
/** The environment's Anthropic key: the provider for every website here (PSEO_PROVIDER). */
const KEY = 'sk-ant-environment-9d3e7a';

/*
 * The durability promises with a provider besides OpenAI: Claude, configured in the environment (which also covers
 * that path), writing a bulk job page by page (PSEO_BULK_MODE=concurrent: the chat path; its Message Batches have
 * their own suite, anthropic-batches.test.ts). A kill -9 mid-job loses nothing and charges once; a cancel with
 * pages at the provider refunds every page not written and keeps what the provider billed in the job's usage.
 */
describe.each(LEGS)('durability with Anthropic on %s', (leg) => {
	describe.skipIf(!legAvailable(leg))(`${leg}`, () => {
		let fake: FakeProvider;
		let directus: DirectusInstance;
		const env = () => ({
			OPENAI_API_KEY: '',
			ANTHROPIC_API_KEY: KEY,
			ANTHROPIC_BASE_URL: fake.url.replace(/\/v1$/, ''),
			PSEO_PROVIDER: 'anthropic',
			PSEO_MODEL: 'claude-sonnet-4-6',
			PSEO_PROVIDER_BACKOFF_MS: '20',
			PSEO_CONCURRENCY: '2',
			PSEO_BULK_MODE: 'concurrent',
		});

		beforeAll(async () => {
			fake = await startFakeProvider();
			directus = await startDirectus({ leg, env: env() });
		});
		afterEach((context) => {
			if (context.task.result?.state === 'fail') console.error(directus.output().slice(-6000));
			fake.reset();
		});
		afterAll(async () => {
			await directus?.dispose();
			await fake?.close();
		});

		it('a bulk job survives a kill -9 mid-job: finished on restart with its provider and model, no duplicate, charged once', async () => {
			const user = await createUser(directus, { balance: 100 });
			const site = await plannedSite(directus, user, 8);
			fake.configure({ holdChat: true });
			const res = await call(directus, 'POST', BULK, { token: user.token, body: { pseo_id: site.pseoId, post_count: 8 } });
			expect(res.status).toBe(202);
			const id = res.body.generation_id as number;
			await eventually(async () => fake.heldChat() === 2, 30_000, 'two pages at the provider');
			expect(fake.releaseChat(2)).toBe(2);
			await eventually(async () => (await jobRow(directus, id)).created_count === 2, 30_000, 'two pages stored');
			await eventually(async () => fake.heldChat() === 2, 30_000, 'the next two pages at the provider');
			await directus.kill();
			fake.configure({ holdChat: false });
			await directus.restart(env());
			const job = await waitForJob(directus, user, id);
			expect(job).toMatchObject({ status: 'completed', created_count: 8, failed_count: 0, provider: 'anthropic', model: 'claude-sonnet-4-6' });
			await expectPostsOnce(directus, site.pseoId, site.routes);
			const ledger = await ledgerOf(directus, user.id);
			expect(ledger.filter((row) => row.reason === 'charge').map((row) => Number(row.amount))).toEqual([-8 * BATCH_PAGE_RATE]);
			expect(ledger.filter((row) => row.reason === 'refund')).toEqual([]);
			expect(await balanceOf(directus, user.id)).toBe(100 - 8 * BATCH_PAGE_RATE);
			// Only the pages in flight at the kill may have been asked twice, and every call went to Claude.
			for (const route of site.routes) expect(fake.countChat(route)).toBeLessThanOrEqual(2);
			expect(fake.countChat()).toBeLessThanOrEqual(10);
			expect(fake.requests.every((entry) => entry.path === '/v1/messages' && entry.apiKey === KEY)).toBe(true);
			expect(directus.output()).not.toContain(KEY);
		});

		it('a cancel with pages at the provider refunds every page not written, and the late answers never land', async () => {
			const user = await createUser(directus, { balance: 100 });
			const site = await plannedSite(directus, user, 4);
			fake.configure({ holdChat: true });
			const res = await call(directus, 'POST', BULK, { token: user.token, body: { pseo_id: site.pseoId, post_count: 4 } });
			const id = res.body.generation_id as number;
			await eventually(async () => fake.heldChat() === 2, 30_000, 'two pages at the provider');
			expect(fake.releaseChat(1)).toBe(1);
			await eventually(async () => (await jobRow(directus, id)).created_count === 1, 30_000, 'one page stored');
			await eventually(async () => fake.heldChat() === 2, 30_000, 'the next page at the provider');

			const cancelled = await call(directus, 'POST', `/pseo-endpoints/generations/${id}/cancel`, { token: user.token });
			expect(cancelled.status).toBe(200);
			expect(cancelled.body.data).toMatchObject({ id, status: 'failed', created_count: 1, failed_count: 3, provider: 'anthropic' });
			expect(await balanceOf(directus, user.id)).toBe(100 - BATCH_PAGE_RATE);

			fake.configure({ holdChat: false });
			fake.releaseChat();
			await waitForGiveUp(directus, id);
			expect((await postedRoutes(directus, site.pseoId)).length).toBe(1);
			const job = await waitForJob(directus, user, id);
			expect(job).toMatchObject({ created_count: 1, failed_count: 3 });
			// The page written was billed; its usage is on the record.
			expect(job['usage'].requests).toBeGreaterThanOrEqual(1);
			await expectLedgerBalances(directus, user);
		});
	});
});
