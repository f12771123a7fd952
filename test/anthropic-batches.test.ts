import { randomBytes } from 'node:crypto';
import { existsSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startFakeProvider, type FakeProvider } from './support/fake-provider/server.ts';
import { adminItems, balanceOf, call, createUser, eventually, ledgerOf, waitForJob } from './support/api.ts';
import { startDirectus, type DirectusInstance } from './support/directus.ts';
import { expectLedgerBalances, expectPostsOnce, jobRow, plannedSite, postedRoutes } from './support/job-checks.ts';
import { LEGS, legAvailable } from './support/legs.ts';

const BULK = '/pseo-endpoints/trigger/bulk-generation';
const BATCH_PAGE_RATE = 5;
/** PSEO_BATCH_MAX_REQUESTS of this suite: a job of 5 pages runs in parts of 2, 2 and 1. */
const MAX_REQUESTS = 2;
/** The environment's Anthropic key: the provider of every website here (PSEO_PROVIDER). */
const KEY = 'sk-ant-batches-5c1f0e7b';

/*
 * Bulk jobs of an Anthropic website run through the Message Batches API, with the promises of OpenAI's batches: a job
 * in parts makes one batch per part and is charged once; a kill -9 between parts or in the middle of an ingest loses
 * nothing, posts nothing twice and charges once; an expired part is sent once more and what neither batch answered
 * is refunded; a cancel stops the batches at the provider and refunds every page not written; the job's usage counts
 * the lines the provider billed; and the key shows in no answer, row or log line.
 */
describe.each(LEGS)('Anthropic message batches on %s', (leg) => {
	describe.skipIf(!legAvailable(leg))(`${leg}`, () => {
		let fake: FakeProvider;
		let directus: DirectusInstance;
		const faultFile = path.join(os.tmpdir(), `pseo-fault-anthropic-${process.pid}-${randomBytes(3).toString('hex')}`);
		const env = () => ({
			OPENAI_API_KEY: '',
			ANTHROPIC_API_KEY: KEY,
			ANTHROPIC_BASE_URL: fake.url.replace(/\/v1$/, ''),
			PSEO_PROVIDER: 'anthropic',
			PSEO_MODEL: 'claude-sonnet-4-6',
			PSEO_PROVIDER_BACKOFF_MS: '20',
			PSEO_BATCH_POLL_INTERVAL_MS: '150',
			PSEO_BATCH_MAX_REQUESTS: String(MAX_REQUESTS),
			PSEO_TEST_FAULT_FILE: faultFile,
			LOG_LEVEL: 'info',
		});

		beforeAll(async () => {
			writeFileSync(faultFile, '');
			fake = await startFakeProvider();
			directus = await startDirectus({ leg, env: env() });
		});
		afterEach(async (context) => {
			if (context.task.result?.state === 'fail') console.error(directus.output().slice(-6000));
			writeFileSync(faultFile, '');
			fake.reset();
			if (!directus.running()) await directus.restart(env());
		});
		afterAll(async () => {
			await directus?.dispose();
			await fake?.close();
			rmSync(faultFile, { force: true });
		});

		/** The message batches created for a job: their custom ids carry its tag. */
		const createdBatches = (jobId: number) =>
			fake.requests.filter(
				(entry) => entry.method === 'POST' && entry.path === '/v1/messages/batches' && entry.status === 200 && (entry.customIds ?? []).every((id) => id.startsWith(`g${jobId}_`)),
			);
		/** The message batches the provider still holds. */
		const heldBatches = async () => {
			const res = await fetch(`${fake.url}/messages/batches?limit=100`, { headers: { 'x-api-key': KEY, 'anthropic-version': '2023-06-01' } });
			expect(res.status).toBe(200);
			return ((await res.json()) as { data: { id: string }[] }).data;
		};
		const partsOf = (jobId: number) => adminItems(directus, 'pseo_generation_parts', `filter[generation_id][_eq]=${jobId}&sort=part`);
		const charges = async (userId: string) => (await ledgerOf(directus, userId)).filter((row) => row.reason === 'charge').map((row) => Number(row.amount));

		/** Arms `point`, runs `work`, and waits for the instance to die there; then disarms it and restarts. */
		async function crashAt(point: string, work: () => Promise<void>): Promise<void> {
			writeFileSync(faultFile, point);
			await work();
			await eventually(async () => !directus.running(), 60_000, `the instance to die at ${point}`);
			writeFileSync(faultFile, '');
			expect(directus.output()).toContain(`fault point ${point} reached`);
			await directus.restart(env());
		}

		it('a bulk job in several parts makes one message batch per part, is charged once, and leaves no batch at the provider', async () => {
			const user = await createUser(directus, { balance: 100 });
			const site = await plannedSite(directus, user, 5);
			const res = await call(directus, 'POST', BULK, { token: user.token, body: { pseo_id: site.pseoId, post_count: 5 } });
			expect(res.status, JSON.stringify(res.body)).toBe(202);
			const id = res.body.generation_id as number;
			const job = await waitForJob(directus, user, id);
			expect(job).toMatchObject({ status: 'completed', created_count: 5, failed_count: 0, provider: 'anthropic', model: 'claude-sonnet-4-6' });
			// Three parts of 2, 2 and 1 lines, each a batch; every route sent once, named by its position.
			expect(createdBatches(id)).toHaveLength(3);
			expect(createdBatches(id).map((entry) => entry.customIds)).toEqual([
				[`g${id}_p0_s0_e2_rn__p0`, `g${id}_p0_s0_e2_rn__p1`],
				[`g${id}_p1_s2_e4_rn__p2`, `g${id}_p1_s2_e4_rn__p3`],
				[`g${id}_p2_s4_e5_rn__p4`],
			]);
			for (const route of site.routes) expect(fake.countBatchedRoute(route)).toBe(1);
			const parts = await partsOf(id);
			expect(parts.map((part) => [part.part, part.route_start, part.route_end, part.status])).toEqual([
				[0, 0, 2, 'ingested'],
				[1, 2, 4, 'ingested'],
				[2, 4, 5, 'ingested'],
			]);
			// A part's input was a local spool, read by the create and removed then.
			for (const part of parts) {
				expect(part.input_file_id).toMatch(/^spool:/);
				expect(existsSync(String(part.input_file_id).slice('spool:'.length))).toBe(false);
			}
			// No page went through chat; the usage counts the five billed lines.
			expect(fake.countChat()).toBe(0);
			expect(job['usage'].requests).toBe(5);
			expect(job['usage'].prompt_tokens).toBeGreaterThan(0);
			await expectPostsOnce(directus, site.pseoId, site.routes);
			expect(await charges(user.id)).toEqual([-5 * BATCH_PAGE_RATE]);
			expect(await balanceOf(directus, user.id)).toBe(100 - 5 * BATCH_PAGE_RATE);
			await expectLedgerBalances(directus, user);
			// Each batch was deleted once its results were stored.
			expect(await heldBatches()).toEqual([]);
		});

		it('a kill -9 between two parts: the restart submits the rest once and the job completes, charged once', async () => {
			const user = await createUser(directus, { balance: 100 });
			const site = await plannedSite(directus, user, 5);
			let id = 0;
			await crashAt('between-parts', async () => {
				const res = await call(directus, 'POST', BULK, { token: user.token, body: { pseo_id: site.pseoId, post_count: 5 } });
				expect(res.status).toBe(202);
				id = res.body.generation_id as number;
			});
			const job = await waitForJob(directus, user, id);
			expect(job).toMatchObject({ status: 'completed', created_count: 5, failed_count: 0 });
			expect(createdBatches(id)).toHaveLength(3);
			for (const route of site.routes) expect(fake.countBatchedRoute(route)).toBe(1);
			await expectPostsOnce(directus, site.pseoId, site.routes);
			expect(await charges(user.id)).toEqual([-5 * BATCH_PAGE_RATE]);
			expect((await ledgerOf(directus, user.id)).filter((row) => row.reason === 'refund')).toEqual([]);
			await expectLedgerBalances(directus, user);
		});

		it('a kill -9 in the middle of an ingest: the restart stores the rest, each page once, charged once', async () => {
			const user = await createUser(directus, { balance: 100 });
			const site = await plannedSite(directus, user, 5);
			let id = 0;
			await crashAt('mid-batch-ingest', async () => {
				const res = await call(directus, 'POST', BULK, { token: user.token, body: { pseo_id: site.pseoId, post_count: 5 } });
				expect(res.status).toBe(202);
				id = res.body.generation_id as number;
			});
			const job = await waitForJob(directus, user, id);
			expect(job).toMatchObject({ status: 'completed', created_count: 5, failed_count: 0 });
			expect(createdBatches(id)).toHaveLength(3);
			await expectPostsOnce(directus, site.pseoId, site.routes);
			expect(await charges(user.id)).toEqual([-5 * BATCH_PAGE_RATE]);
			expect((await ledgerOf(directus, user.id)).filter((row) => row.reason === 'refund')).toEqual([]);
			await expectLedgerBalances(directus, user);
			expect(await heldBatches()).toEqual([]);
		});

		it('an expired part is sent once more for what it left unanswered, and what neither answered is refunded', async () => {
			const user = await createUser(directus, { balance: 100 });
			const site = await plannedSite(directus, user, 4);
			// Every batch expires with half its requests answered: 1 of 2 per part, then 0 of the 1 sent again.
			fake.configure({ batchEndState: 'expired', batchPartialFraction: 0.5 });
			const res = await call(directus, 'POST', BULK, { token: user.token, body: { pseo_id: site.pseoId, post_count: 4 } });
			const job = await waitForJob(directus, user, res.body.generation_id as number);
			expect(job).toMatchObject({ status: 'failed', created_count: 2, failed_count: 2 });
			for (const failure of job['failed_routes']) expect(failure.error).toMatch(/expired/);
			// Two parts, each resubmitted once.
			expect(createdBatches(job['id'])).toHaveLength(4);
			const parts = await partsOf(job['id']);
			expect(parts.map((part) => [part.part, part.resubmit_of, part.status])).toEqual([
				[0, null, 'ingested'],
				[1, null, 'ingested'],
				[2, 0, 'ingested'],
				[3, 1, 'ingested'],
			]);
			expect(fake.countChat()).toBe(0);
			expect((await postedRoutes(directus, site.pseoId)).length).toBe(2);
			expect(await balanceOf(directus, user.id)).toBe(100 - 4 * BATCH_PAGE_RATE + 2 * BATCH_PAGE_RATE);
			await expectLedgerBalances(directus, user);
		});

		it('a cancel stops the batches at the provider, refunds every page not written, and keeps what they billed in the usage', async () => {
			const user = await createUser(directus, { balance: 100 });
			const site = await plannedSite(directus, user, 4);
			// The batches wait; cancelled, each answers half its requests before it ends.
			fake.configure({ holdBatches: true, batchPartialFraction: 0.5 });
			const res = await call(directus, 'POST', BULK, { token: user.token, body: { pseo_id: site.pseoId, post_count: 4 } });
			const id = res.body.generation_id as number;
			await eventually(async () => (await partsOf(id)).length === 2, 30_000, 'both parts at the provider');

			const cancelled = await call(directus, 'POST', `/pseo-endpoints/generations/${id}/cancel`, { token: user.token });
			expect(cancelled.status, JSON.stringify(cancelled.body)).toBe(200);
			expect(cancelled.body.data).toMatchObject({ id, status: 'failed', created_count: 0, failed_count: 4, provider: 'anthropic' });
			expect(await balanceOf(directus, user.id)).toBe(100);
			const cancels = fake.requests.filter((entry) => entry.method === 'POST' && /^\/v1\/messages\/batches\/[^/]+\/cancel$/.test(entry.path) && entry.status === 200);
			expect(cancels).toHaveLength(2);

			// Once stopped, the lines they answered are counted in the job's usage, and the batches are deleted.
			await eventually(async () => (await partsOf(id)).every((part) => part.status === 'ingested'), 30_000, 'the stopped batches settled');
			const job = await waitForJob(directus, user, id);
			expect(job['usage'].requests).toBe(2);
			await eventually(async () => (await heldBatches()).length === 0, 30_000, 'the batches deleted at the provider');
			expect(await postedRoutes(directus, site.pseoId)).toEqual([]);
			expect(site.routes).toHaveLength(4);
			await expectLedgerBalances(directus, user);
		});

		it('no key in the answers, the rows or the log', async () => {
			const user = await createUser(directus, { balance: 100 });
			const site = await plannedSite(directus, user, 3);
			const res = await call(directus, 'POST', BULK, { token: user.token, body: { pseo_id: site.pseoId, post_count: 3 } });
			const id = res.body.generation_id as number;
			const job = await waitForJob(directus, user, id);
			expect(job).toMatchObject({ status: 'completed', created_count: 3 });
			expect(fake.requests.filter((entry) => entry.path.startsWith('/v1/messages')).every((entry) => entry.apiKey === KEY)).toBe(true);
			expect(JSON.stringify(res.body)).not.toContain(KEY);
			expect(JSON.stringify(job)).not.toContain(KEY);
			expect(JSON.stringify(await jobRow(directus, id))).not.toContain(KEY);
			expect(JSON.stringify(await partsOf(id))).not.toContain(KEY);
			expect(directus.output()).not.toContain(KEY);
		});
	});
});
