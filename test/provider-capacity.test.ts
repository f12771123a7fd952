import { beforeEach, expect, it } from 'vitest';
import { adminItems, balanceOf, call, createUser, eventually, waitForJob, type TestUser } from './support/api.ts';
import { useSharedDirectus } from './support/directus.ts';
import { expectLedgerBalances, expectPostsOnce, plannedSite } from './support/job-checks.ts';
import { describeLegs, ENGINE_ENV, LEGS } from './support/legs.ts';

const BULK = '/pseo-endpoints/trigger/bulk-generation';
const ON_DEMAND = '/pseo-endpoints/trigger/on-demand-generation';
/** PSEO_BATCH_MAX_REQUESTS of this suite: a job of 9 pages makes parts of 3. */
const MAX_REQUESTS = 3;
/** PSEO_PROVIDER_CAPACITY_WAIT_MS of this suite: a job that waits this long without progress fails what is left. */
const CAPACITY_WAIT_MS = 6000;
const BATCH_PAGE_RATE = 5;

/** The suite's instance: small parts, quick polls, a short capacity wait, and an Anthropic key beside OpenAI's. */
const CAPACITY_ENV: Record<string, string> = {
	...ENGINE_ENV,
	PSEO_BATCH_MAX_REQUESTS: String(MAX_REQUESTS),
	PSEO_BATCH_POLL_INTERVAL_MS: '150',
	PSEO_PROVIDER_CAPACITY_WAIT_MS: String(CAPACITY_WAIT_MS),
	// A call waits at most this long for its provider's rate limit; then its page goes back to its job's next step.
	PSEO_PROVIDER_RATE_WAIT_MS: '300',
	ANTHROPIC_API_KEY: 'sk-ant-capacity-0b6e2d',
};

/*
 * Provider limits, as the vendors enforce them: a batch queue of so many enqueued tokens (OpenAI fails a batch beyond
 * it with `token_limit_exceeded`, Anthropic refuses its create with 429) and a rate limit on calls. Waiting is not
 * failing: every job ends completed with nothing refunded, unless it waited longer than PSEO_PROVIDER_CAPACITY_WAIT_MS
 * without progress.
 */
describeLegs('provider capacity on %s', LEGS, (leg) => {
	const { directus, fake } = useSharedDirectus(leg, CAPACITY_ENV);

	// Each test meets the provider's limit afresh: what the cluster learnt of it before is forgotten.
	beforeEach(async () => {
		const learnt = await adminItems(directus, 'pseo_batch_capacity', 'fields=provider');
		if (learnt.length > 0) {
			const res = await call(directus, 'DELETE', '/items/pseo_batch_capacity', { token: directus.adminToken, body: learnt.map((row) => row.provider) });
			expect(res.status).toBe(204);
		}
	});

	const partsOf = (jobId: number) => adminItems(directus, 'pseo_generation_parts', `filter[generation_id][_eq]=${jobId}&sort=part`);
	const read = async (user: TestUser, id: number) => (await call(directus, 'GET', `/pseo-endpoints/generations/${id}`, { token: user.token })).body.data as Record<string, any>;

	/** The provider's tokens for one part of MAX_REQUESTS pages, as it counts them: a job of one part, with no limit. */
	async function partTokens(website: Record<string, unknown> = {}): Promise<number> {
		const user = await createUser(directus, { balance: 100 });
		const { pseoId } = await plannedSite(directus, user, MAX_REQUESTS, website);
		const res = await call(directus, 'POST', BULK, { token: user.token, body: { pseo_id: pseoId, post_count: MAX_REQUESTS } });
		expect(res.status).toBe(202);
		expect(await waitForJob(directus, user, res.body.generation_id)).toMatchObject({ status: 'completed' });
		const tokens = fake.maxEnqueuedTokens();
		expect(tokens).toBeGreaterThan(0);
		fake.reset();
		return tokens;
	}

	/** Runs a bulk job of `pages` to its end and checks what every such job must show: each page once, no refund. */
	async function completesWithoutRefund(user: TestUser, pseoId: number, routes: string[]): Promise<Record<string, any>> {
		const res = await call(directus, 'POST', BULK, { token: user.token, body: { pseo_id: pseoId, post_count: routes.length } });
		expect(res.status).toBe(202);
		const id = res.body.generation_id as number;
		const job = await waitForJob(directus, user, id, 90_000);
		expect(job).toMatchObject({ status: 'completed', requested_count: routes.length, created_count: routes.length, failed_count: 0, failed_routes: [] });
		await expectPostsOnce(directus, pseoId, routes);
		const ledger = await expectLedgerBalances(directus, user);
		expect(ledger.filter((row) => row.reason === 'refund')).toEqual([]);
		// Each page was answered once: the provider billed one line per page.
		expect((await read(user, id)).usage.requests).toBe(routes.length);
		return { ...job, id };
	}

	it('a job of several parts under a batch queue that holds one part and a half completes with every page, nothing refunded', async () => {
		const part = await partTokens();
		const limit = Math.floor(part * 1.5);
		fake.configure({ enqueuedTokenLimit: limit });
		const user = await createUser(directus, { balance: 100 });
		const { pseoId, routes } = await plannedSite(directus, user, 9);
		const job = await completesWithoutRefund(user, pseoId, routes);
		// The provider never held more than its limit, and the engine went on from what it learnt of the limit.
		expect(fake.maxEnqueuedTokens()).toBeLessThanOrEqual(limit);
		const parts = await partsOf(job.id);
		expect(parts.filter((row) => row.status === 'refused').length).toBe(fake.capacityRefusals());
		expect(parts.every((row) => row.status === 'ingested' || row.status === 'refused')).toBe(true);
		// The refused parts' routes went again in later parts: the parts that ran cover every route once.
		const ran = parts.filter((row) => row.status === 'ingested').flatMap((row) => Array.from({ length: row.route_end - row.route_start }, (_, i) => row.route_start + i));
		expect(ran.sort((a, b) => a - b)).toEqual(routes.map((_, i) => i));
		for (const row of parts) expect(Number(row.estimated_tokens)).toBeGreaterThan(0);
		// The wait is over: the job's record says nothing is wrong.
		expect(job.last_error).toBeNull();
		expect(await balanceOf(directus, user.id)).toBe(100 - 9 * BATCH_PAGE_RATE);
	});

	it('while a part waits for the provider\'s queue, the job says why, without asking for attention', async () => {
		const part = await partTokens();
		fake.configure({ enqueuedTokenLimit: Math.floor(part * 1.5), holdBatches: true });
		const user = await createUser(directus, { balance: 100 });
		const { pseoId, routes } = await plannedSite(directus, user, 6);
		const res = await call(directus, 'POST', BULK, { token: user.token, body: { pseo_id: pseoId, post_count: routes.length } });
		const id = res.body.generation_id as number;
		const waiting = await eventually(async () => {
			const job = await read(user, id);
			return job.last_error?.code === 'provider_capacity' ? job : null;
		}, 30_000, 'the job to wait for the provider');
		expect(waiting).toMatchObject({ status: 'running', attention: false });
		expect(waiting.last_error.message).toMatch(/^Waiting for provider capacity: OpenAI/);
		// What the queue holds, and who waits, is seen from outside: GET /providers and the metrics.
		const queue = (await call(directus, 'GET', '/pseo-endpoints/providers', { token: user.token })).body.data.providers.find((entry: { provider: string }) => entry.provider === 'openai').batch_queue;
		expect(queue).toMatchObject({ limit_source: 'learnt', jobs_waiting: 1 });
		expect(queue.enqueued_tokens).toBeGreaterThan(0);
		expect(queue.enqueued_tokens).toBeLessThanOrEqual(queue.limit_tokens);
		const metrics = await fetch(`${directus.url}/pseo-endpoints/metrics`, { headers: { authorization: `Bearer ${directus.adminToken}` } }).then((res) => res.text());
		expect(metrics).toContain(`pseo_batch_enqueued_tokens{provider="openai"} ${queue.enqueued_tokens}`);
		expect(metrics).toContain('pseo_jobs_waiting_for_capacity{provider="openai"} 1');
		fake.configure({ holdBatches: false });
		fake.releaseBatches();
		expect(await waitForJob(directus, user, id, 90_000)).toMatchObject({ status: 'completed', created_count: 6, last_error: null });
	});

	it('two jobs of two users share the queue: both finish, and the small one is not held behind the whole of the big one', async () => {
		const part = await partTokens();
		fake.configure({ enqueuedTokenLimit: Math.floor(part * 1.5) });
		const big = await createUser(directus, { balance: 100 });
		const small = await createUser(directus, { balance: 100 });
		const bigSite = await plannedSite(directus, big, 15);
		const smallSite = await plannedSite(directus, small, 3);
		const bigJob = await call(directus, 'POST', BULK, { token: big.token, body: { pseo_id: bigSite.pseoId, post_count: 15 } });
		// The big job has its first part at the provider before the small one is asked for.
		await eventually(async () => (await partsOf(bigJob.body.generation_id)).length > 0, 30_000, 'the big job\'s first part');
		const smallJob = await call(directus, 'POST', BULK, { token: small.token, body: { pseo_id: smallSite.pseoId, post_count: 3 } });
		const [bigDone, smallDone] = await Promise.all([waitForJob(directus, big, bigJob.body.generation_id, 120_000), waitForJob(directus, small, smallJob.body.generation_id, 120_000)]);
		expect(bigDone).toMatchObject({ status: 'completed', created_count: 15, failed_count: 0 });
		expect(smallDone).toMatchObject({ status: 'completed', created_count: 3, failed_count: 0 });
		// The small job's part ran before the big job's last part was sent.
		const created = (row: Record<string, any>) => Date.parse(row.date_created as string);
		const smallRan = (await partsOf(smallJob.body.generation_id)).filter((row) => row.status === 'ingested');
		const bigRan = (await partsOf(bigJob.body.generation_id)).filter((row) => row.status === 'ingested');
		expect(bigRan.length).toBeGreaterThanOrEqual(5);
		expect(Math.min(...smallRan.map(created))).toBeLessThan(Math.max(...bigRan.map(created)));
		expect(fake.maxEnqueuedTokens()).toBeLessThanOrEqual(Math.floor(part * 1.5));
		for (const user of [big, small]) expect((await expectLedgerBalances(directus, user)).filter((row) => row.reason === 'refund')).toEqual([]);
	});

	it('a part bigger than the whole queue is split, and completes', async () => {
		const part = await partTokens();
		const limit = Math.floor(part * 0.6);
		fake.configure({ enqueuedTokenLimit: limit });
		const user = await createUser(directus, { balance: 100 });
		const { pseoId, routes } = await plannedSite(directus, user, MAX_REQUESTS);
		const job = await completesWithoutRefund(user, pseoId, routes);
		const parts = await partsOf(job.id);
		expect(parts[0]).toMatchObject({ status: 'refused', route_start: 0, route_end: MAX_REQUESTS });
		const ran = parts.filter((row) => row.status === 'ingested');
		expect(ran.length).toBeGreaterThan(1);
		for (const row of ran) expect(row.route_end - row.route_start).toBeLessThan(MAX_REQUESTS);
		expect(fake.maxEnqueuedTokens()).toBeLessThanOrEqual(limit);
	});

	it('Anthropic refuses the create while its queue is full: the part waits, and the job completes with nothing refunded', async () => {
		const part = await partTokens({ provider: 'anthropic' });
		fake.configure({ enqueuedTokenLimit: Math.floor(part * 1.5) });
		const user = await createUser(directus, { balance: 100 });
		const { pseoId, routes } = await plannedSite(directus, user, 9, { provider: 'anthropic' });
		await completesWithoutRefund(user, pseoId, routes);
		expect(fake.capacityRefusals()).toBeGreaterThan(0);
		expect(fake.maxEnqueuedTokens()).toBeLessThanOrEqual(Math.floor(part * 1.5));
	});

	it(`a wait longer than PSEO_PROVIDER_CAPACITY_WAIT_MS fails the job's pages and refunds them, with the reason`, async () => {
		// A queue that holds nothing: every part is refused, for ever.
		fake.configure({ enqueuedTokenLimit: 1 });
		const user = await createUser(directus, { balance: 100 });
		const { pseoId } = await plannedSite(directus, user, 2);
		const started = Date.now();
		const res = await call(directus, 'POST', BULK, { token: user.token, body: { pseo_id: pseoId, post_count: 2 } });
		const job = await waitForJob(directus, user, res.body.generation_id, 60_000);
		expect(Date.now() - started).toBeGreaterThanOrEqual(CAPACITY_WAIT_MS);
		expect(job).toMatchObject({ status: 'failed', created_count: 0, failed_count: 2 });
		expect(job.last_error).toMatchObject({ code: 'provider_capacity' });
		expect(job.last_error.message).toMatch(/without progress \(PSEO_PROVIDER_CAPACITY_WAIT_MS\); its remaining pages failed and were refunded\.$/);
		expect(job.failed_routes.map((route: { error: string }) => route.error)).toEqual([job.last_error.message, job.last_error.message]);
		expect(await balanceOf(directus, user.id)).toBe(100);
	});

	it('a page the provider keeps answering 429 waits for the next step instead of failing', async () => {
		// Each 429 asks for a second, longer than a call may wait (PSEO_PROVIDER_RATE_WAIT_MS): the page goes back to
		// the job, which waits and tries it again at its next steps, until the provider serves it.
		fake.configure({ rateLimit: { count: 3, retryAfterS: 1 } });
		const user = await createUser(directus, { balance: 100 });
		const { pseoId, routes } = await plannedSite(directus, user, 1);
		const res = await call(directus, 'POST', ON_DEMAND, { token: user.token, body: { pseo_id: pseoId, post_count: 1 } });
		expect(res.status).toBe(202);
		// The job says it waits while it does, and asks for no attention.
		const waiting = await eventually(async () => {
			const job = await read(user, res.body.generation_id);
			return job.last_error?.code === 'provider_capacity' ? job : null;
		}, 20_000, 'the job to wait for the provider\'s rate limit');
		expect(waiting).toMatchObject({ status: 'running', attention: false, failed_count: 0 });
		expect(waiting.last_error.message).toMatch(/^Waiting for provider capacity: OpenAI kept answering that its rate limit was reached for 1 page/);
		const job = await waitForJob(directus, user, res.body.generation_id, 60_000);
		expect(job).toMatchObject({ status: 'completed', created_count: 1, failed_count: 0, last_error: null });
		expect(fake.countChat(routes[0])).toBe(4);
		expect((await expectLedgerBalances(directus, user)).filter((row) => row.reason === 'refund')).toEqual([]);
	});
});
