import { randomBytes } from 'node:crypto';
import { existsSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startFakeProvider, type FakeProvider } from './support/fake-provider/server.ts';
import type { RequestLogEntry } from './support/fake-provider/request-log.ts';
import { adminItems, balanceOf, call, createUser, eventually, ledgerOf, waitForJob } from './support/api.ts';
import { startDirectus, type DirectusInstance } from './support/directus.ts';
import { expectLedgerBalances, expectPostsOnce, jobRow, plannedSite, postedRoutes } from './support/job-checks.ts';
import { LEGS, legAvailable } from './support/legs.ts';

const BULK = '/pseo-endpoints/trigger/bulk-generation';
const BATCH_PAGE_RATE = 5;
/** PSEO_BATCH_MAX_REQUESTS of this suite: a job of 5 pages runs in parts of 2, 2 and 1. */
const MAX_REQUESTS = 2;
/** The environment's keys: Anthropic is the provider of websites that name none (PSEO_PROVIDER), Google of the others. */
const ANTHROPIC_KEY = 'sk-ant-batches-5c1f0e7b';
const GOOGLE_KEY = 'AIza-batches-93d1c4a8';

/** How one vendor's batch API shows at the fake, and the websites that run on it. */
interface Vendor {
	provider: 'anthropic' | 'google';
	/** What a website of this vendor names (Anthropic is the instance's default). */
	website: Record<string, unknown>;
	model: string;
	key: string;
	/** The path prefix of the vendor's API at the fake. */
	api: string;
	/** The batch creates a job made: the engine's tag names the job. */
	creates(fake: FakeProvider, jobId: number): RequestLogEntry[];
	/** What each create sent, as the vendor names a request, for a job of 5 pages in parts of 2, 2 and 1. */
	sentIds(jobId: number, routes: string[]): string[][];
	/** What a part's row names as its input: a local spool (Anthropic), or a file uploaded to the Files API (Google). */
	input: RegExp;
	/** The batches the vendor still holds, and the files (Google's Files API). */
	held(fake: FakeProvider): Promise<unknown[]>;
	cancelPath: RegExp;
}

const ok = (entry: RequestLogEntry, method: string, pattern: RegExp) => entry.method === method && pattern.test(entry.path) && entry.status === 200;

/** The batches, or the files, the Gemini API holds for the key. */
async function geminiList(fake: FakeProvider, kind: 'batches' | 'files'): Promise<unknown[]> {
	const res = await fetch(`${fake.url.replace(/\/v1$/, '')}/v1beta/${kind}?pageSize=100`, { headers: { 'x-goog-api-key': GOOGLE_KEY } });
	expect(res.status).toBe(200);
	return ((await res.json()) as Record<string, unknown[] | undefined>)[kind === 'batches' ? 'operations' : 'files'] ?? [];
}

const VENDORS: Vendor[] = [
	{
		provider: 'anthropic',
		website: {},
		model: 'claude-sonnet-4-6',
		key: ANTHROPIC_KEY,
		api: '/v1/messages',
		// A message batch has no metadata: the tag rides at the head of each custom id, and a line is named by its position.
		creates: (fake, jobId) => fake.requests.filter((entry) => ok(entry, 'POST', /^\/v1\/messages\/batches$/) && (entry.customIds ?? []).every((id) => id.startsWith(`g${jobId}_`))),
		sentIds: (jobId) => [
			[`g${jobId}_p0_s0_e2_rn__p0`, `g${jobId}_p0_s0_e2_rn__p1`],
			[`g${jobId}_p1_s2_e4_rn__p2`, `g${jobId}_p1_s2_e4_rn__p3`],
			[`g${jobId}_p2_s4_e5_rn__p4`],
		],
		input: /^spool:/,
		held: async (fake) => {
			const res = await fetch(`${fake.url}/messages/batches?limit=100`, { headers: { 'x-api-key': ANTHROPIC_KEY, 'anthropic-version': '2023-06-01' } });
			expect(res.status).toBe(200);
			return ((await res.json()) as { data: unknown[] }).data;
		},
		cancelPath: /^\/v1\/messages\/batches\/[^/]+\/cancel$/,
	},
	{
		provider: 'google',
		website: { provider: 'google' },
		model: 'gemini-2.5-flash',
		key: GOOGLE_KEY,
		api: '/v1beta/',
		// A Gemini batch carries the tag in its display name, and a request is named by its route.
		creates: (fake, jobId) =>
			fake.requests.filter((entry) => ok(entry, 'POST', /^\/v1beta\/models\/[^/]+:batchGenerateContent$/) && (entry.metadata?.['display_name'] ?? '').startsWith(`g${jobId}_`)),
		sentIds: (_jobId, routes) => [routes.slice(0, 2), routes.slice(2, 4), routes.slice(4)],
		input: /^files\/[a-z0-9-]+$/,
		held: async (fake) => [...(await geminiList(fake, 'batches')), ...(await geminiList(fake, 'files'))],
		cancelPath: /^\/v1beta\/batches\/[^/]+:cancel$/,
	},
];

/*
 * Bulk jobs of an Anthropic or a Google website run through the vendor's batch API (Message Batches, the Gemini Batch
 * API), with the promises of OpenAI's batches: a job in parts makes one batch per part and is charged once; a kill -9
 * between parts or in the middle of an ingest loses nothing, posts nothing twice and charges once; an expired part is
 * sent once more and what neither batch answered is refunded; a cancel stops the batches at the provider and refunds
 * every page not written; the job's usage counts the lines the provider billed; and no key shows in any answer, row
 * or log line. One instance per database runs both vendors' websites.
 */
describe.each(LEGS)('provider batches on %s', (leg) => {
	describe.skipIf(!legAvailable(leg))(`${leg}`, () => {
		let fake: FakeProvider;
		let directus: DirectusInstance;
		const faultFile = path.join(os.tmpdir(), `pseo-fault-batches-${process.pid}-${randomBytes(3).toString('hex')}`);
		const env = () => ({
			OPENAI_API_KEY: '',
			ANTHROPIC_API_KEY: ANTHROPIC_KEY,
			ANTHROPIC_BASE_URL: fake.url.replace(/\/v1$/, ''),
			GEMINI_API_KEY: GOOGLE_KEY,
			GOOGLE_GEMINI_BASE_URL: fake.url.replace(/\/v1$/, ''),
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

		const partsOf = (jobId: number) => adminItems(directus, 'pseo_generation_parts', `filter[generation_id][_eq]=${jobId}&sort=part`);
		const charges = async (userId: string) => (await ledgerOf(directus, userId)).filter((row) => row.reason === 'charge').map((row) => Number(row.amount));

		/**
		 * Arms `point`, runs `work`, and waits for the instance to die there; then disarms it, runs `inWindow` (what
		 * the crash left), and restarts.
		 */
		async function crashAt(point: string, work: () => Promise<void>, inWindow?: () => Promise<void>): Promise<void> {
			writeFileSync(faultFile, point);
			await work();
			await eventually(async () => !directus.running(), 60_000, `the instance to die at ${point}`);
			writeFileSync(faultFile, '');
			expect(directus.output()).toContain(`fault point ${point} reached`);
			await inWindow?.();
			await directus.restart(env());
		}

		describe.each(VENDORS)('$provider', (vendor) => {
			it('a bulk job in several parts makes one batch per part, is charged once, and leaves no batch at the provider', async () => {
				const user = await createUser(directus, { balance: 100 });
				const site = await plannedSite(directus, user, 5, vendor.website);
				const res = await call(directus, 'POST', BULK, { token: user.token, body: { pseo_id: site.pseoId, post_count: 5 } });
				expect(res.status, JSON.stringify(res.body)).toBe(202);
				const id = res.body.generation_id as number;
				const job = await waitForJob(directus, user, id);
				expect(job).toMatchObject({ status: 'completed', created_count: 5, failed_count: 0, provider: vendor.provider, model: vendor.model });
				// Three parts of 2, 2 and 1 lines, each a batch; every route sent once.
				expect(vendor.creates(fake, id).map((entry) => entry.customIds)).toEqual(vendor.sentIds(id, site.routes));
				for (const route of site.routes) expect(fake.countBatchedRoute(route)).toBe(1);
				const parts = await partsOf(id);
				expect(parts.map((part) => [part.part, part.route_start, part.route_end, part.status])).toEqual([
					[0, 0, 2, 'ingested'],
					[1, 2, 4, 'ingested'],
					[2, 4, 5, 'ingested'],
				]);
				// An Anthropic part's input was a local spool, read by the create and removed then; a Google part's, an
				// upload, deleted with the part's batch (below).
				for (const part of parts) {
					expect(part.input_file_id).toMatch(vendor.input);
					if (vendor.provider === 'anthropic') expect(existsSync(String(part.input_file_id).slice('spool:'.length))).toBe(false);
				}
				// No page went through chat; the usage counts the five billed lines.
				expect(fake.countChat()).toBe(0);
				expect(job['usage'].requests).toBe(5);
				expect(job['usage'].prompt_tokens).toBeGreaterThan(0);
				expect(job['usage'].completion_tokens).toBeGreaterThan(0);
				await expectPostsOnce(directus, site.pseoId, site.routes);
				expect(await charges(user.id)).toEqual([-5 * BATCH_PAGE_RATE]);
				expect(await balanceOf(directus, user.id)).toBe(100 - 5 * BATCH_PAGE_RATE);
				await expectLedgerBalances(directus, user);
				// Each batch was deleted once its results were stored, with its files.
				expect(await vendor.held(fake)).toEqual([]);
			});

			it.each(['between-parts', 'mid-batch-ingest'])('a kill -9 at %s: the restart goes on, each page once, charged once', async (point) => {
				const user = await createUser(directus, { balance: 100 });
				const site = await plannedSite(directus, user, 5, vendor.website);
				let id = 0;
				await crashAt(point, async () => {
					const res = await call(directus, 'POST', BULK, { token: user.token, body: { pseo_id: site.pseoId, post_count: 5 } });
					expect(res.status).toBe(202);
					id = res.body.generation_id as number;
				});
				const job = await waitForJob(directus, user, id);
				expect(job).toMatchObject({ status: 'completed', created_count: 5, failed_count: 0 });
				expect(vendor.creates(fake, id)).toHaveLength(3);
				for (const route of site.routes) expect(fake.countBatchedRoute(route)).toBe(1);
				await expectPostsOnce(directus, site.pseoId, site.routes);
				expect(await charges(user.id)).toEqual([-5 * BATCH_PAGE_RATE]);
				expect((await ledgerOf(directus, user.id)).filter((row) => row.reason === 'refund')).toEqual([]);
				await expectLedgerBalances(directus, user);
				expect(await vendor.held(fake)).toEqual([]);
			});

			it('an expired part is sent once more for what it left unanswered, and what neither answered is refunded', async () => {
				const user = await createUser(directus, { balance: 100 });
				const site = await plannedSite(directus, user, 4, vendor.website);
				// Every batch expires with half its requests answered: 1 of 2 per part, then 0 of the 1 sent again.
				fake.configure({ batchEndState: 'expired', batchPartialFraction: 0.5 });
				const res = await call(directus, 'POST', BULK, { token: user.token, body: { pseo_id: site.pseoId, post_count: 4 } });
				const job = await waitForJob(directus, user, res.body.generation_id as number);
				expect(job).toMatchObject({ status: 'failed', created_count: 2, failed_count: 2 });
				for (const failure of job['failed_routes']) expect(failure.error).toMatch(/expired/);
				// Two parts, each resubmitted once.
				expect(vendor.creates(fake, job['id'])).toHaveLength(4);
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
				const site = await plannedSite(directus, user, 4, vendor.website);
				// The batches wait; cancelled, each answers half its requests before it ends.
				fake.configure({ holdBatches: true, batchPartialFraction: 0.5 });
				const res = await call(directus, 'POST', BULK, { token: user.token, body: { pseo_id: site.pseoId, post_count: 4 } });
				const id = res.body.generation_id as number;
				await eventually(async () => (await partsOf(id)).length === 2, 30_000, 'both parts at the provider');

				const cancelled = await call(directus, 'POST', `/pseo-endpoints/generations/${id}/cancel`, { token: user.token });
				expect(cancelled.status, JSON.stringify(cancelled.body)).toBe(200);
				expect(cancelled.body.data).toMatchObject({ id, status: 'failed', created_count: 0, failed_count: 4, provider: vendor.provider });
				expect(await balanceOf(directus, user.id)).toBe(100);
				expect(fake.requests.filter((entry) => ok(entry, 'POST', vendor.cancelPath))).toHaveLength(2);

				// Once stopped, the lines they answered are counted in the job's usage, and the batches are deleted.
				await eventually(async () => (await partsOf(id)).every((part) => part.status === 'ingested'), 30_000, 'the stopped batches settled');
				const job = await waitForJob(directus, user, id);
				expect(job['usage'].requests).toBe(2);
				await eventually(async () => (await vendor.held(fake)).length === 0, 30_000, 'the batches deleted at the provider');
				expect(await postedRoutes(directus, site.pseoId)).toEqual([]);
				expect(site.routes).toHaveLength(4);
				await expectLedgerBalances(directus, user);
			});

			it('no key in the answers, the rows or the log', async () => {
				const user = await createUser(directus, { balance: 100 });
				const site = await plannedSite(directus, user, 3, vendor.website);
				const res = await call(directus, 'POST', BULK, { token: user.token, body: { pseo_id: site.pseoId, post_count: 3 } });
				const id = res.body.generation_id as number;
				const job = await waitForJob(directus, user, id);
				expect(job).toMatchObject({ status: 'completed', created_count: 3 });
				const calls = fake.requests.filter((entry) => entry.path.startsWith(vendor.api));
				expect(calls.length).toBeGreaterThan(0);
				expect(calls.every((entry) => entry.apiKey === vendor.key)).toBe(true);
				for (const key of [ANTHROPIC_KEY, GOOGLE_KEY]) {
					expect(JSON.stringify(res.body)).not.toContain(key);
					expect(JSON.stringify(job)).not.toContain(key);
					expect(JSON.stringify(await jobRow(directus, id))).not.toContain(key);
					expect(JSON.stringify(await partsOf(id))).not.toContain(key);
					expect(directus.output()).not.toContain(key);
				}
			});
		});

		it('google: a kill -9 right after a create, before the part is stored: the restart adopts that batch by its display name, never a second', async () => {
			const google = VENDORS[1]!;
			const user = await createUser(directus, { balance: 100 });
			const site = await plannedSite(directus, user, 5, google.website);
			let id = 0;
			await crashAt(
				'after-batch-create',
				async () => {
					const res = await call(directus, 'POST', BULK, { token: user.token, body: { pseo_id: site.pseoId, post_count: 5 } });
					expect(res.status).toBe(202);
					id = res.body.generation_id as number;
				},
				async () => {
					// In the window: the provider has the first part's batch, which the job never stored (the log line below).
					expect(google.creates(fake, id)).toHaveLength(1);
				},
			);
			const job = await waitForJob(directus, user, id);
			expect(job).toMatchObject({ status: 'completed', created_count: 5, failed_count: 0 });
			expect(google.creates(fake, id)).toHaveLength(3);
			expect(directus.output()).toMatch(new RegExp(`"jobId":${id},"part":0,"batchId":"batches/[^"]+".*adopted after a lost create`));
			for (const route of site.routes) expect(fake.countBatchedRoute(route)).toBe(1);
			await expectPostsOnce(directus, site.pseoId, site.routes);
			expect(await charges(user.id)).toEqual([-5 * BATCH_PAGE_RATE]);
			await expectLedgerBalances(directus, user);
			expect(await google.held(fake)).toEqual([]);
		});

		it('google: a kill -9 while a results file streams: the restart reads it again from its start, each page once, nothing refunded, every file deleted', async () => {
			const google = VENDORS[1]!;
			const user = await createUser(directus, { balance: 100 });
			const site = await plannedSite(directus, user, 5, google.website);
			// Every download of a results file sends its first line, then waits with its connection open.
			fake.configure({ holdFileAfterLines: 1 });
			const res = await call(directus, 'POST', BULK, { token: user.token, body: { pseo_id: site.pseoId, post_count: 5 } });
			expect(res.status).toBe(202);
			const id = res.body.generation_id as number;
			await eventually(async () => fake.heldFiles() === 1, 60_000, 'a results file held mid-download');
			const downloads = (fileId?: string) => fake.requests.filter((entry) => entry.method === 'GET' && entry.path.startsWith('/download/v1beta/files/') && (fileId === undefined || entry.fileId === fileId));
			const held = downloads().at(-1)!.fileId!;
			expect(held).toMatch(/^files\//);
			// The three parts went up through the Files API's resumable upload, each batch created from its file.
			const starts = fake.requests.filter((entry) => entry.path === '/upload/v1beta/files' && entry.extraHeaders?.['x-goog-upload-command'] === 'start');
			expect(starts).toHaveLength(3);
			expect(google.creates(fake, id).map((entry) => entry.fileId)).toEqual((await partsOf(id)).map((part) => part.input_file_id));

			await directus.kill();
			fake.configure({ holdFileAfterLines: null });
			await directus.restart(env());
			const job = await waitForJob(directus, user, id);
			expect(job).toMatchObject({ status: 'completed', created_count: 5, failed_count: 0 });
			// The file cut by the kill was read again, whole; no part was sent twice, and no page went through chat.
			expect(downloads(held)).toHaveLength(2);
			expect(downloads()).toHaveLength(4);
			expect(google.creates(fake, id)).toHaveLength(3);
			for (const route of site.routes) expect(fake.countBatchedRoute(route)).toBe(1);
			expect(fake.countChat()).toBe(0);
			await expectPostsOnce(directus, site.pseoId, site.routes);
			expect(await charges(user.id)).toEqual([-5 * BATCH_PAGE_RATE]);
			expect((await ledgerOf(directus, user.id)).filter((row) => row.reason === 'refund')).toEqual([]);
			await expectLedgerBalances(directus, user);
			// Every upload, results file and batch is deleted at Google.
			expect(await google.held(fake)).toEqual([]);
		});
	});
});
