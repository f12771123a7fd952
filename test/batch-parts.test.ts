import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startFakeProvider, type FakeProvider } from './support/fake-provider/server.ts';
import { adminItems, balanceOf, call, createUser, eventually, waitForJob } from './support/api.ts';
import { startDirectus, type DirectusInstance } from './support/directus.ts';
import { batchesOf, expectLedgerBalances, expectPostsOnce, plannedSite } from './support/job-checks.ts';
import { LEGS, legAvailable } from './support/legs.ts';

const BULK = '/pseo-endpoints/trigger/bulk-generation';
/** PSEO_BATCH_MAX_REQUESTS of this suite: 7 pages make parts of 3, 3 and 1. */
const MAX_REQUESTS = 3;
/** PSEO_PROVIDER_MAX_STEP_FAILURES of this suite. */
const MAX_STEP_FAILURES = 4;

async function partsOf(directus: DirectusInstance, jobId: number): Promise<Record<string, any>[]> {
	return adminItems(directus, 'pseo_generation_parts', `filter[generation_id][_eq]=${jobId}&sort=part`);
}

/** The routes each created batch of a job was given, from the fake's log, in the order the batches were created. */
function batchMetadata(fake: FakeProvider, jobId: number): Record<string, string>[] {
	return fake.requests
		.filter((entry) => entry.method === 'POST' && entry.path === '/v1/batches' && entry.status === 200 && entry.metadata?.['pseo_generation_id'] === String(jobId))
		.map((entry) => entry.metadata as Record<string, string>);
}

/** The files the provider holds, as its file list reports them. */
async function providerFiles(fake: FakeProvider): Promise<unknown[]> {
	const res = await fetch(`${fake.url}/files`, { headers: { authorization: 'Bearer test-key' } });
	expect(res.status).toBe(200);
	return ((await res.json()) as { data: unknown[] }).data;
}

/** Uploads one JSONL line straight to the provider, as a file left there by someone; resolves to its id. */
async function uploadToProvider(fake: FakeProvider, filename: string): Promise<string> {
	const form = new FormData();
	form.append('purpose', 'batch');
	form.append('file', new Blob([`${JSON.stringify({ custom_id: '/x', method: 'POST', url: '/v1/chat/completions', body: {} })}\n`]), filename);
	const res = await fetch(`${fake.url}/files`, { method: 'POST', headers: { authorization: 'Bearer test-key' }, body: form });
	expect(res.status).toBe(200);
	return ((await res.json()) as { id: string }).id;
}

/** A batch as the provider reports it. */
async function providerBatch(fake: FakeProvider, id: string): Promise<{ status: string; request_counts: { completed: number } }> {
	const res = await fetch(`${fake.url}/batches/${id}`, { headers: { authorization: 'Bearer test-key' } });
	expect(res.status).toBe(200);
	return (await res.json()) as { status: string; request_counts: { completed: number } };
}

describe.each(LEGS)('bulk jobs in parts on %s', (leg) => {
	describe.skipIf(!legAvailable(leg))(`${leg}`, () => {
		let fake: FakeProvider;
		let directus: DirectusInstance;

		beforeAll(async () => {
			fake = await startFakeProvider();
			directus = await startDirectus({
				leg,
				env: {
					OPENAI_BASE_URL: fake.url,
					PSEO_PROVIDER_BACKOFF_MS: '20',
					PSEO_BATCH_POLL_INTERVAL_MS: '200',
					PSEO_SWEEP_INTERVAL_MS: '100',
					PSEO_BATCH_MAX_REQUESTS: String(MAX_REQUESTS),
					// Three refused steps in a row fail a job (the cases below let two pass); a 401 gets ten minutes.
					PSEO_PROVIDER_MAX_STEP_FAILURES: String(MAX_STEP_FAILURES),
					PSEO_AUTH_FAILURE_GRACE_MS: '600000',
					// The look for our files left at the provider runs every half second, not every hour.
					PSEO_HOUSEKEEPING_INTERVAL_MS: '500',
					// The parts' log lines (info) are part of what this suite checks.
					LOG_LEVEL: 'info',
				},
			});
		});
		afterEach(() => fake.reset());
		afterAll(async () => {
			await directus?.dispose();
			await fake?.close();
		});

		it('4.5 a bulk job beyond PSEO_BATCH_MAX_REQUESTS runs as several provider batches, each polled and ingested, charged once', async () => {
			const user = await createUser(directus, { balance: 100 });
			const { pseoId, routes } = await plannedSite(directus, user, 7);
			fake.configure({ holdBatches: true });
			const res = await call(directus, 'POST', BULK, { token: user.token, body: { pseo_id: pseoId, post_count: 7 } });
			expect(res.status).toBe(202);
			const id = res.body.generation_id as number;

			// Every part is at the provider before any finishes: three batches of 3, 3 and 1 lines, tagged with their routes.
			await eventually(async () => batchesOf(fake, id) === 3, 30_000, 'three batches');
			expect(batchMetadata(fake, id).map((meta) => [meta['pseo_generation_part'], meta['route_start'], meta['route_end']])).toEqual([
				[`${id}:0`, '0', '3'],
				[`${id}:1`, '3', '6'],
				[`${id}:2`, '6', '7'],
			]);
			for (const route of routes) expect(fake.countBatchedRoute(route)).toBe(1);
			// A part is stored just after the provider created its batch: wait for the third row, not only the batch.
			const running = await eventually(async () => {
				const parts = await partsOf(directus, id);
				return parts.length === 3 ? parts : null;
			}, 30_000, 'three stored parts');
			expect(running.map((part) => [part.part, part.route_start, part.route_end, part.status])).toEqual([
				[0, 0, 3, 'running'],
				[1, 3, 6, 'running'],
				[2, 6, 7, 'running'],
			]);

			fake.releaseBatches();
			const job = await waitForJob(directus, user, id);
			expect(job).toMatchObject({ status: 'completed', requested_count: 7, created_count: 7, failed_count: 0, failed_routes: [] });
			expect((await partsOf(directus, id)).map((part) => part.status)).toEqual(['ingested', 'ingested', 'ingested']);
			await expectPostsOnce(directus, pseoId, routes);
			expect(batchesOf(fake, id)).toBe(3);
			// Each part's files are deleted at the provider once its outcome is stored: none is left.
			const uploaded = fake.requests.filter((entry) => entry.method === 'POST' && entry.path === '/v1/files' && entry.status === 200);
			expect(uploaded).toHaveLength(3);
			// Three inputs and three outputs, each deleted once, before the job completed.
			const deleted = fake.requests.filter((entry) => entry.method === 'DELETE' && entry.status === 200);
			expect(deleted).toHaveLength(6);
			expect(new Set(deleted.map((entry) => entry.path)).size).toBe(6);
			expect(await providerFiles(fake)).toEqual([]);
			expect(await balanceOf(directus, user.id)).toBe(100 - 7 * 5);
			const ledger = await expectLedgerBalances(directus, user);
			expect(ledger.filter((row) => row.reason === 'charge')).toHaveLength(1);
			// The job keeps its first part's batch, as jobs of one part always have.
			expect((await adminItems(directus, 'pseo_generations', `filter[id][_eq]=${id}`))[0].batch_id).toBe(running[0]!.batch_id);
			// Usage sums every part's lines.
			const read = await call(directus, 'GET', `/pseo-endpoints/generations/${id}`, { token: user.token });
			expect(read.body.data.usage.requests).toBe(7);
			// Each part's log line says how many pages it ingested and where the ingest's time went.
			const logged = directus
				.output()
				.split('\n')
				.flatMap((line) => {
					try {
						const entry = JSON.parse(line) as Record<string, unknown>;
						return entry['msg'] === 'pseo batch part ingested' && entry['jobId'] === id ? [entry] : [];
					} catch {
						return [];
					}
				});
			expect(logged.map((entry) => [entry['part'], entry['pages'], entry['unanswered']]).sort()).toEqual([
				[0, 3, 0],
				[1, 3, 0],
				[2, 1, 0],
			]);
			for (const entry of logged) {
				for (const field of ['ms', 'judgeMs', 'writeMs', 'waitMs']) expect(entry[field], field).toSatisfy((value: unknown) => Number.isInteger(value) && (value as number) >= 0);
				expect(entry['writeMs'] as number).toBeLessThanOrEqual(entry['ms'] as number);
			}
		});

		it('an expired part is resubmitted once for its unanswered lines, and the job completes without a second charge', async () => {
			const user = await createUser(directus, { balance: 100 });
			const { pseoId, routes } = await plannedSite(directus, user, 5);
			// Both parts expire with half their lines answered; their resubmissions complete.
			fake.configure({ holdBatches: true, batchEndState: 'expired', batchPartialFraction: 0.5 });
			const res = await call(directus, 'POST', BULK, { token: user.token, body: { pseo_id: pseoId, post_count: 5 } });
			const id = res.body.generation_id as number;
			await eventually(async () => batchesOf(fake, id) === 2, 30_000, 'two batches');
			fake.configure({ batchEndState: 'completed', holdBatches: false });

			const job = await waitForJob(directus, user, id);
			expect(job).toMatchObject({ status: 'completed', created_count: 5, failed_count: 0 });
			await expectPostsOnce(directus, pseoId, routes);
			const parts = await partsOf(directus, id);
			expect(parts.map((part) => [part.part, part.resubmit_of, part.route_start, part.route_end, part.status])).toEqual([
				[0, null, 0, 3, 'ingested'],
				[1, null, 3, 5, 'ingested'],
				[2, 0, 0, 3, 'ingested'],
				[3, 1, 3, 5, 'ingested'],
			]);
			// Each route went to the provider once, and a second time only if its first batch left it unanswered.
			const answeredFirst = routes.filter((route) => fake.countBatchedRoute(route) === 1);
			expect(answeredFirst.length).toBeGreaterThan(0);
			expect(routes.every((route) => fake.countBatchedRoute(route) <= 2)).toBe(true);
			// The expired parts' files went with their ingest, the resubmissions' with theirs.
			expect(await providerFiles(fake)).toEqual([]);
			expect(await balanceOf(directus, user.id)).toBe(100 - 5 * 5);
		});

		it('files the provider refuses to delete are logged and left to its expiry, and the job completes', async () => {
			const user = await createUser(directus, { balance: 100 });
			const { pseoId, routes } = await plannedSite(directus, user, 4);
			fake.configure({ refuseFileDeletes: true });
			const res = await call(directus, 'POST', BULK, { token: user.token, body: { pseo_id: pseoId, post_count: 4 } });
			const id = res.body.generation_id as number;
			const job = await waitForJob(directus, user, id);
			expect(job).toMatchObject({ status: 'completed', created_count: 4, failed_count: 0 });
			await expectPostsOnce(directus, pseoId, routes);
			// Two parts, each with an input and an output file: every delete was refused once (a 403 is not retried).
			const refused = fake.requests.filter((entry) => entry.method === 'DELETE');
			expect(refused.map((entry) => entry.status)).toEqual([403, 403, 403, 403]);
			expect(await providerFiles(fake)).toHaveLength(4);
			const warned = directus
				.output()
				.split('\n')
				.filter((line) => line.includes('pseo batch file could not be deleted at the provider') && line.includes(`"jobId":${id}`));
			expect(warned.map((line) => JSON.parse(line).fileId).sort()).toEqual(refused.map((entry) => entry.path.split('/').pop()).sort());
			expect(await balanceOf(directus, user.id)).toBe(100 - 4 * 5);
		});

		/**
		 * A two-page bulk job whose batch creates answer `status` until `attempts` of them have, then succeed: the
		 * completed job, its website's routes, and how many creates answered `status`.
		 */
		async function jobThroughFailedCreates(status: number, attempts: number) {
			const user = await createUser(directus, { balance: 100 });
			const { pseoId, routes } = await plannedSite(directus, user, 2);
			fake.configure({ refuseBatchCreates: status });
			const res = await call(directus, 'POST', BULK, { token: user.token, body: { pseo_id: pseoId, post_count: 2 } });
			const failed = () => fake.requests.filter((entry) => entry.method === 'POST' && entry.path === '/v1/batches' && entry.status === status).length;
			await eventually(async () => failed() >= attempts, 30_000, `${attempts} creates answered ${status}`);
			fake.configure({ refuseBatchCreates: null });
			const job = await waitForJob(directus, user, res.body.generation_id as number);
			// The refused steps were on the record while they lasted; the step that went through cleared them.
			expect(job).toMatchObject({ status: 'completed', created_count: 2, failed_count: 0, last_error: null, attention: false });
			await expectPostsOnce(directus, pseoId, routes);
			expect(await balanceOf(directus, user.id)).toBe(100 - 2 * 5);
			const uploads = fake.requests.filter((entry) => entry.method === 'POST' && entry.path === '/v1/files' && entry.status === 200).length;
			// One upload per attempt, the failed ones included.
			expect(uploads).toBe(failed() + 1);
			return { failed: failed(), uploads };
		}

		/** The job as its owner reads it, and the health check as an admin reads it. */
		async function troubleOf(user: { token: string }, id: number) {
			const job = (await call(directus, 'GET', `/pseo-endpoints/generations/${id}`, { token: user.token })).body.data;
			const health = (await call(directus, 'GET', '/pseo-endpoints/', { token: directus.adminToken })).body;
			return { job, needingAttention: health.jobs_needing_attention as number };
		}

		const createsAnswered = (status: number) => fake.requests.filter((entry) => entry.method === 'POST' && entry.path === '/v1/batches' && entry.status === status).length;
		const uploads = () => fake.requests.filter((entry) => entry.method === 'POST' && entry.path === '/v1/files' && entry.status === 200).length;

		it('a batch create refused for good fails its job after PSEO_PROVIDER_MAX_STEP_FAILURES steps: last_error on the record, every page refunded, nothing more uploaded', async () => {
			const user = await createUser(directus, { balance: 100 });
			const { pseoId } = await plannedSite(directus, user, 2);
			fake.configure({ refuseBatchCreates: 400 });
			const res = await call(directus, 'POST', BULK, { token: user.token, body: { pseo_id: pseoId, post_count: 2 } });
			const id = res.body.generation_id as number;

			// While its steps fail, the job says so, and the admins' health check counts it.
			const failing = await eventually(async () => {
				const trouble = await troubleOf(user, id);
				return trouble.job.attention ? trouble : null;
			}, 30_000, 'the job marked for attention');
			expect(failing.job.status).toBe('running');
			expect(failing.job.last_error).toMatchObject({ code: 'bad_request' });
			expect(failing.job.last_error.message).toMatch(/HTTP 400.*not supported by the Batch API/);
			expect(failing.needingAttention).toBe(1);
			const anonymous = await call(directus, 'GET', '/pseo-endpoints/');
			expect(anonymous.body).not.toHaveProperty('jobs_needing_attention');
			const owner = await call(directus, 'GET', '/pseo-endpoints/', { token: user.token });
			expect(owner.body).not.toHaveProperty('jobs_needing_attention');

			const job = await waitForJob(directus, user, id);
			expect(job).toMatchObject({ status: 'failed', created_count: 0, failed_count: 2, attention: false });
			expect(job['last_error']).toMatchObject({ code: 'bad_request', attempts: MAX_STEP_FAILURES });
			expect(job['failed_routes'].map((failure: { error: string }) => failure.error)).toEqual([job['last_error'].message, job['last_error'].message]);
			expect(await balanceOf(directus, user.id)).toBe(100);
			await expectLedgerBalances(directus, user);
			expect(createsAnswered(400)).toBe(MAX_STEP_FAILURES);
			expect(uploads()).toBe(MAX_STEP_FAILURES);
			// An ended job polls no more: several poll intervals later, nothing more was uploaded or created.
			await new Promise((resolve) => setTimeout(resolve, 1500));
			expect(uploads()).toBe(MAX_STEP_FAILURES);
			expect(fake.requests.filter((entry) => entry.method === 'POST' && entry.path === '/v1/batches')).toHaveLength(MAX_STEP_FAILURES);
			expect(await providerFiles(fake)).toEqual([]);
			expect((await troubleOf(user, id)).needingAttention).toBe(0);
			// The list shows the same trouble as the record.
			const listed = await call(directus, 'GET', `/pseo-endpoints/generations?pseo_id=${pseoId}`, { token: user.token });
			expect(listed.body.data[0]).toMatchObject({ id, attention: false, last_error: job['last_error'] });
		});

		it('a cancel stops every running part: the lines the stopped batches answered are in the job\'s usage, and all their files are deleted', async () => {
			const user = await createUser(directus, { balance: 100 });
			const { pseoId } = await plannedSite(directus, user, 7);
			fake.configure({ holdBatches: true });
			const res = await call(directus, 'POST', BULK, { token: user.token, body: { pseo_id: pseoId, post_count: 7 } });
			const id = res.body.generation_id as number;
			const parts = await eventually(async () => {
				const stored = await partsOf(directus, id);
				return stored.length === 3 ? stored : null;
			}, 30_000, 'three stored parts');

			const cancelled = await call(directus, 'POST', `/pseo-endpoints/generations/${id}/cancel`, { token: user.token });
			expect(cancelled.status).toBe(200);
			expect(cancelled.body.data).toMatchObject({ status: 'failed', created_count: 0, failed_count: 7 });
			// Each part is settled once its batch has stopped at the provider.
			await eventually(async () => (await partsOf(directus, id)).every((part) => part.status === 'ingested'), 30_000, 'every part settled');
			const batches = await Promise.all(parts.map((part) => providerBatch(fake, part['batch_id'] as string)));
			expect(batches.map((batch) => batch.status)).toEqual(['cancelled', 'cancelled', 'cancelled']);
			const answered = batches.reduce((sum, batch) => sum + batch.request_counts.completed, 0);
			expect(answered).toBeGreaterThan(0);
			// The provider billed those lines; their pages were refunded with the cancel and are not stored.
			const job = (await call(directus, 'GET', `/pseo-endpoints/generations/${id}`, { token: user.token })).body.data;
			expect(job.usage.requests).toBe(answered);
			expect(job.usage.prompt_tokens).toBeGreaterThan(0);
			expect(job).toMatchObject({ status: 'failed', created_count: 0, failed_count: 7 });
			expect(await balanceOf(directus, user.id)).toBe(100);
			await expectLedgerBalances(directus, user);
			// Inputs, outputs and error files: none is left at the provider.
			expect(await providerFiles(fake)).toEqual([]);
			// Logged after the part's commit: the line reaches this process through the instance's stdout, a moment later.
			const stopped = "pseo batch of an ended job has stopped: the lines it billed are in the job's usage";
			await eventually(async () => directus.output().includes(stopped), 5_000, 'the stopped batch logged');
		});

		it('an upload of an ended job left at the provider is deleted once a day old; fresh uploads and files not ours are kept', async () => {
			const user = await createUser(directus, { balance: 100 });
			const { pseoId } = await plannedSite(directus, user, 1);
			const res = await call(directus, 'POST', BULK, { token: user.token, body: { pseo_id: pseoId, post_count: 1 } });
			const id = res.body.generation_id as number;
			expect((await waitForJob(directus, user, id))['status']).toBe('completed');

			// Left behind two days ago: a crash between an upload and its part, say.
			fake.configure({ uploadAgeS: 2 * 24 * 3600 });
			const orphan = await uploadToProvider(fake, `pseo-generation-${id}-part-5.jsonl`);
			const foreign = await uploadToProvider(fake, 'someone-elses-batch.jsonl');
			fake.configure({ uploadAgeS: 0 });
			const fresh = await uploadToProvider(fake, `pseo-generation-${id}-part-6.jsonl`);

			await eventually(async () => fake.requests.some((entry) => entry.method === 'DELETE' && entry.path === `/v1/files/${orphan}`), 15_000, 'the orphan deleted');
			// The instance logs the deletion once the provider has answered it, a moment after the fake saw the request.
			const deleted = 'pseo: a batch file of an ended job was left at the provider; deleted';
			await eventually(async () => directus.output().includes(deleted), 5_000, 'the deletion logged');
			const left = ((await providerFiles(fake)) as { id: string }[]).map((file) => file.id).sort();
			expect(left).toEqual([foreign, fresh].sort());
		});

		// The grace is the step-failure schedule's, which reads and writes the same columns on every vendor: one leg
		// proves it, and its waits cost eight seconds a leg.
		it.skipIf(leg !== 'postgres')('a 401 that clears within PSEO_AUTH_FAILURE_GRACE_MS does not fail the job: it completes once the key works again, its trouble cleared', async () => {
			const user = await createUser(directus, { balance: 100 });
			const { pseoId, routes } = await plannedSite(directus, user, 2);
			fake.configure({ refuseBatchCreates: 401 });
			const res = await call(directus, 'POST', BULK, { token: user.token, body: { pseo_id: pseoId, post_count: 2 } });
			const id = res.body.generation_id as number;
			// More refused steps than a 400 would be allowed, all within the grace (each recorded just after its 401).
			const failing = await eventually(async () => {
				const trouble = await troubleOf(user, id);
				return trouble.job.last_error?.attempts > MAX_STEP_FAILURES ? trouble : null;
			}, 30_000, `more than ${MAX_STEP_FAILURES} steps refused with 401 on the record`);
			expect(failing.job).toMatchObject({ status: 'running', attention: true, last_error: { code: 'unauthorized' } });
			// The key's text, which a 401 echoes in part, is never on the record.
			expect(failing.job.last_error.message).toBe('Provider rejected the API key (HTTP 401)');
			fake.configure({ refuseBatchCreates: null });

			const job = await waitForJob(directus, user, id);
			expect(job).toMatchObject({ status: 'completed', created_count: 2, failed_count: 0, last_error: null, attention: false });
			await expectPostsOnce(directus, pseoId, routes);
			expect(await balanceOf(directus, user.id)).toBe(100 - 2 * 5);
		});

		it('an upload whose batch create is refused is deleted, at every step that tries again', async () => {
			const { uploads } = await jobThroughFailedCreates(400, 2);
			// Each refused upload, and the run batch's input and output: nothing is left at the provider.
			expect(fake.requests.filter((entry) => entry.method === 'DELETE' && entry.status === 200)).toHaveLength(uploads + 1);
			expect(await providerFiles(fake)).toEqual([]);
		});

		it('an upload whose batch create failed with a 5xx is kept: the batch may exist, and its next step would adopt it', async () => {
			const { failed } = await jobThroughFailedCreates(503, 1);
			// Only the run batch's input and output are deleted; every upload whose create failed stays.
			expect(fake.requests.filter((entry) => entry.method === 'DELETE')).toHaveLength(2);
			expect(await providerFiles(fake)).toHaveLength(failed);
		});

		it('a part that expires twice is not resubmitted again: its unanswered lines fail and are refunded', async () => {
			const user = await createUser(directus, { balance: 100 });
			const { pseoId } = await plannedSite(directus, user, 3);
			fake.configure({ batchEndState: 'expired', batchPartialFraction: 0.5 });
			const res = await call(directus, 'POST', BULK, { token: user.token, body: { pseo_id: pseoId, post_count: 3 } });
			const id = res.body.generation_id as number;
			const job = await waitForJob(directus, user, id);
			expect(job['status']).toBe('failed');
			expect(job['created_count'] + job['failed_count']).toBe(3);
			expect(job['failed_count']).toBeGreaterThan(0);
			expect(job['failed_routes'].every((failure: { error: string }) => /expired/.test(failure.error))).toBe(true);
			expect(batchesOf(fake, id)).toBe(2);
			expect((await partsOf(directus, id)).map((part) => part.resubmit_of)).toEqual([null, 0]);
			expect(await balanceOf(directus, user.id)).toBe(100 - job['created_count'] * 5);
			await expectLedgerBalances(directus, user);
		});

		it('a part whose batch the provider no longer knows fails its lines, refunded, and the job ends', async () => {
			const user = await createUser(directus, { balance: 100 });
			const { pseoId } = await plannedSite(directus, user, 3);
			fake.configure({ holdBatches: true });
			const res = await call(directus, 'POST', BULK, { token: user.token, body: { pseo_id: pseoId, post_count: 3 } });
			const id = res.body.generation_id as number;
			await eventually(async () => batchesOf(fake, id) === 1, 30_000, 'the part\'s batch created');
			// The provider forgets every batch (one deleted at the provider, a key moved to another project): 404.
			fake.reset();
			const job = await waitForJob(directus, user, id);
			expect(job['status']).toBe('failed');
			expect(job['failed_count']).toBe(3);
			expect(job['failed_routes'].every((failure: { error: string }) => /no longer knows this batch/.test(failure.error))).toBe(true);
			expect(await balanceOf(directus, user.id)).toBe(100);
			await expectLedgerBalances(directus, user);
		});

		it('a line the provider answers unusably is written once more through chat, at no extra charge', async () => {
			const user = await createUser(directus, { balance: 100 });
			const { pseoId, routes } = await plannedSite(directus, user, 3);
			// The route's first answer (its batch line) is invalid; the chat call that follows succeeds.
			fake.configure({ failRoutes: { [routes[1]!]: 'invalid' }, failRoutesTimes: 1 });
			const res = await call(directus, 'POST', BULK, { token: user.token, body: { pseo_id: pseoId, post_count: 3 } });
			const job = await waitForJob(directus, user, res.body.generation_id);
			expect(job).toMatchObject({ status: 'completed', created_count: 3, failed_count: 0 });
			expect(fake.countChat(routes[1])).toBe(1);
			expect(fake.countChat(routes[0])).toBe(0);
			await expectPostsOnce(directus, pseoId, routes);
			expect(await balanceOf(directus, user.id)).toBe(100 - 3 * 5);
		});
	});
});
