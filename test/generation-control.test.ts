import { expect, it, onTestFinished } from 'vitest';
import { adminItems, balanceOf, call, createUser, eventually, expectEnvelope, ledgerOf, waitForJob } from './support/api.ts';
import { shareDirectusWithFake, useSharedDirectus, type DirectusInstance } from './support/directus.ts';
import { expectPostsOnce, jobRow, plannedSite, postedRoutes, waitForGiveUp } from './support/job-checks.ts';
import { ACCOUNTING_ENV, describeLegs, ENGINE_ENV, ENGINE_INTERFACE_LEGS, USER_DAILY_CAP } from './support/legs.ts';

/*
 * A job's controls: cancel (stored, fenced, refunded) and retry (a new job for the failed pages only). The
 * cross-instance cancel is in stall.test.ts, beside the other two-instance fence tests.
 */

const ON_DEMAND = '/pseo-endpoints/trigger/on-demand-generation';
const BULK = '/pseo-endpoints/trigger/bulk-generation';
/** The default rates, which the shared instances keep. */
const PAGE_RATE = 10;
const BATCH_RATE = 5;
const USER_CAP = USER_DAILY_CAP;

const cancel = (directus: DirectusInstance, token: string, id: number | string) =>
	call(directus, 'POST', `/pseo-endpoints/generations/${id}/cancel`, { token });
const retry = (directus: DirectusInstance, token: string, id: number | string) =>
	call(directus, 'POST', `/pseo-endpoints/generations/${id}/retry`, { token });

describeLegs('job controls on %s', ENGINE_INTERFACE_LEGS, (leg) => {
	// These tests are about the controls, not takeovers: ENGINE_ENV's long lease keeps a cancel from being taken over
	// (and carried out twice) halfway on a loaded machine.
	const { directus, fake } = useSharedDirectus(leg, ENGINE_ENV);

	it('cancel stops a chat job with its page at the provider: cancelled, refunded, and the late answer never lands', async () => {
		const user = await createUser(directus, { balance: 100 });
		const site = await plannedSite(directus, user, 2);
		fake.configure({ holdChat: true });
		const started = await call(directus, 'POST', ON_DEMAND, { token: user.token, body: { pseo_id: site.pseoId, post_count: 1 } });
		const id = started.body.generation_id as number;
		await eventually(async () => fake.heldChat() === 1, 20_000, 'the page at the provider');

		const res = await cancel(directus, user.token, id);
		expect(res.status).toBe(200);
		expect(res.body.data).toMatchObject({
			id,
			status: 'failed',
			requested_count: 1,
			created_count: 0,
			failed_count: 1,
			failed_routes: [{ route: site.routes[0], error: 'cancelled' }],
		});
		expect(res.body.data.date_completed).toMatch(/Z$/);
		expect(await balanceOf(directus, user.id)).toBe(100);

		// The provider answers after all: the worker's write is refused, nothing changes.
		// (The worker may have dropped the call first, on finding its lease gone.)
		fake.configure({ holdChat: false });
		fake.releaseChat();
		await waitForGiveUp(directus, id);
		expect(await postedRoutes(directus, site.pseoId)).toEqual([]);
		expect((await waitForJob(directus, user, id))['failed_count']).toBe(1);
		const ledger = await ledgerOf(directus, user.id);
		expect(ledger.map((row) => [row.reason, Number(row.amount)])).toEqual([['grant', 100], ['charge', -PAGE_RATE], ['refund', PAGE_RATE]]);
		// The website is free for its next job.
		expect((await call(directus, 'POST', ON_DEMAND, { token: user.token, body: { pseo_id: site.pseoId, post_count: 1 } })).status).toBe(202);
	});

	it('cancel stops a batch job at the provider and refunds every page', async () => {
		const user = await createUser(directus, { balance: 100 });
		const site = await plannedSite(directus, user, 6);
		fake.configure({ holdBatches: true });
		const started = await call(directus, 'POST', BULK, { token: user.token, body: { pseo_id: site.pseoId, post_count: 6 } });
		const id = started.body.generation_id as number;
		const batchId = await eventually(async () => (await jobRow(directus, id)).batch_id as string | null, 30_000, 'a stored batch id');

		const res = await cancel(directus, user.token, id);
		expect(res.status).toBe(200);
		expect(res.body.data).toMatchObject({ status: 'failed', requested_count: 6, created_count: 0, failed_count: 6 });
		expect(res.body.data.failed_routes.map((failure: { route: string; error: string }) => [failure.route, failure.error]).sort()).toEqual(
			site.routes.map((route) => [route, 'cancelled']).sort(),
		);
		// Once; a cancel taken over halfway by another worker would ask again, which the provider tolerates.
		expect(fake.requests.filter((entry) => entry.method === 'POST' && entry.path === `/v1/batches/${batchId}/cancel`).length).toBeGreaterThanOrEqual(1);
		expect(fake.requests.filter((entry) => entry.method === 'POST' && /^\/v1\/batches\/[^/]+\/cancel$/.test(entry.path) && entry.path !== `/v1/batches/${batchId}/cancel`)).toEqual([]);
		expect(await balanceOf(directus, user.id)).toBe(100);
		const refunds = (await ledgerOf(directus, user.id)).filter((row) => row.reason === 'refund');
		expect(refunds.map((row) => Number(row.amount))).toEqual(site.routes.map(() => BATCH_RATE));
	});

	it('a batch whose create was in flight when the job was cancelled is cancelled at the provider once it exists', async () => {
		const user = await createUser(directus, { balance: 100 });
		const site = await plannedSite(directus, user, 4);
		// The worker checked its lease and sent the create; the provider answers only after the cancel.
		fake.configure({ holdBatchCreates: true });
		const started = await call(directus, 'POST', BULK, { token: user.token, body: { pseo_id: site.pseoId, post_count: 4 } });
		const id = started.body.generation_id as number;
		await eventually(async () => fake.heldBatchCreates() > 0, 30_000, 'a batch create held at the provider');

		const res = await cancel(directus, user.token, id);
		expect(res.status).toBe(200);
		expect(res.body.data).toMatchObject({ status: 'failed', requested_count: 4, created_count: 0, failed_count: 4 });
		fake.releaseBatchCreates();
		const late = await eventually(
			async () => fake.requests.find((entry) => entry.method === 'POST' && entry.path === '/v1/batches' && entry.batchId)?.batchId,
			30_000,
			'the batch the held create made',
		);
		// The cancel looked for the job's batches before this one existed; the worker that made it stops it.
		await eventually(async () => fake.requests.some((entry) => entry.method === 'POST' && entry.path === `/v1/batches/${late}/cancel`), 30_000, 'a cancel of the late batch');
		expect(await balanceOf(directus, user.id)).toBe(100);
		expect((await jobRow(directus, id)).created_count).toBe(0);
	});

	it('cancel answers 409 on a finished job, and 400, 403 and 404 as the other job routes do', async () => {
		const user = await createUser(directus, { balance: 100 });
		const site = await plannedSite(directus, user, 2);
		const started = await call(directus, 'POST', ON_DEMAND, { token: user.token, body: { pseo_id: site.pseoId, post_count: 1 } });
		const id = started.body.generation_id as number;
		expect((await waitForJob(directus, user, id))['status']).toBe('completed');
		expectEnvelope(await cancel(directus, user.token, id), 409);
		const stranger = await createUser(directus);
		expectEnvelope(await cancel(directus, stranger.token, id), 403);
		expectEnvelope(await cancel(directus, user.token, 99_999_999), 404);
		expectEnvelope(await cancel(directus, user.token, 'abc'), 400);
		expectEnvelope(await call(directus, 'POST', `/pseo-endpoints/generations/${id}/cancel`), 401);
		expect(await balanceOf(directus, user.id)).toBe(100 - PAGE_RATE);
	});

	it('retry runs only the failed pages of a finished job, in its mode, and charges that mode\'s rate', async () => {
		const user = await createUser(directus, { balance: 100 });
		const site = await plannedSite(directus, user, 4);
		fake.configure({ failRoutes: { [site.routes[1]!]: 'error', [site.routes[3]!]: 'error' } });
		const started = await call(directus, 'POST', BULK, { token: user.token, body: { pseo_id: site.pseoId, post_count: 4 } });
		const first = await waitForJob(directus, user, started.body.generation_id);
		expect(first).toMatchObject({ status: 'failed', created_count: 2, failed_count: 2 });
		expect(await balanceOf(directus, user.id)).toBe(100 - 2 * BATCH_RATE);

		// While the failing pages still fail, a retry of an active retry is refused.
		fake.configure({ failRoutes: {}, holdBatches: true });
		const res = await retry(directus, user.token, first['id']);
		expect(res.status).toBe(202);
		expect(res.body).toMatchObject({ success: true, status: 'pending', generation_id: expect.any(Number) });
		const second = res.body.generation_id as number;
		expectEnvelope(await retry(directus, user.token, second), 400);
		expectEnvelope(await retry(directus, user.token, first['id']), 409);
		fake.configure({ holdBatches: false });
		fake.releaseBatches();
		const done = await waitForJob(directus, user, second);
		expect(done).toMatchObject({ status: 'completed', requested_count: 2, created_count: 2, failed_count: 0 });
		await expectPostsOnce(directus, site.pseoId, site.routes);
		const batched = fake.requests.filter((entry) => entry.path === '/v1/batches' && entry.method === 'POST').at(-1)!;
		expect([...(batched.routes ?? [])].sort()).toEqual([site.routes[1], site.routes[3]].sort());
		const charges = (await ledgerOf(directus, user.id)).filter((row) => row.reason === 'charge').map((row) => Number(row.amount));
		expect(charges).toEqual([-4 * BATCH_RATE, -2 * BATCH_RATE]);
		expect(await balanceOf(directus, user.id)).toBe(100 - 4 * BATCH_RATE);

		// Nothing is left to retry now.
		expectEnvelope(await retry(directus, user.token, first['id']), 400);
		const stranger = await createUser(directus);
		expectEnvelope(await retry(directus, stranger.token, first['id']), 403);
		expectEnvelope(await retry(directus, user.token, 99_999_999), 404);
	});

	it('retry answers 402 when the balance cannot pay for the failed pages, and changes nothing', async () => {
		const user = await createUser(directus, { balance: 2 * BATCH_RATE });
		const site = await plannedSite(directus, user, 2);
		fake.configure({ failRoutes: Object.fromEntries(site.routes.map((route) => [route, 'error'])) });
		const started = await call(directus, 'POST', BULK, { token: user.token, body: { pseo_id: site.pseoId, post_count: 2 } });
		const failed = await waitForJob(directus, user, started.body.generation_id);
		expect(failed).toMatchObject({ status: 'failed', failed_count: 2 });
		// Refunded in full; the balance goes to a page of another website instead.
		fake.configure({ failRoutes: {} });
		const elsewhere = await plannedSite(directus, user, 1);
		const other = await call(directus, 'POST', ON_DEMAND, { token: user.token, body: { pseo_id: elsewhere.pseoId, post_count: 1 } });
		await waitForJob(directus, user, other.body.generation_id);
		expect(await balanceOf(directus, user.id)).toBe(0);
		expectEnvelope(await retry(directus, user.token, failed['id']), 402);
		expect(await balanceOf(directus, user.id)).toBe(0);
		expect((await ledgerOf(directus, user.id)).filter((row) => row.reason === 'charge')).toHaveLength(2);
	});

	it('a per-user daily cap holds under parallel triggers: what fits is accepted, the rest is 402 naming the cap', async () => {
		// The cap is set for the whole instance: this test takes the one whose users all stay under it.
		const { directus, fake } = await shareDirectusWithFake(leg, ACCOUNTING_ENV);
		onTestFinished(async () => {
			await directus.dispose();
			await fake.close();
		});
		const user = await createUser(directus, { balance: 1000 });
		const capToday = async () => (await call(directus, 'GET', '/pseo-endpoints/balance', { token: user.token })).body.data.daily_cap;
		expect(await capToday()).toEqual({ limit: USER_CAP, left: USER_CAP });
		const sites = [];
		for (let i = 0; i < 8; i++) sites.push(await plannedSite(directus, user, 2));
		const answers = await Promise.all(
			sites.map((site) => call(directus, 'POST', ON_DEMAND, { token: user.token, body: { pseo_id: site.pseoId, post_count: 1 } })),
		);
		expect(answers.map((answer) => answer.status).sort()).toEqual([202, 202, 202, 202, 402, 402, 402, 402]);
		for (const answer of answers.filter((a) => a.status === 402)) {
			expect(expectEnvelope(answer, 402).error).toMatch(/PSEO_USER_DAILY_TOKEN_CAP\) of 45 tokens leaves 5 for today/);
		}
		expect(await balanceOf(directus, user.id)).toBe(1000 - 4 * PAGE_RATE);
		// GET /balance tells a client before the click what is left of the cap today.
		expect(await capToday()).toEqual({ limit: USER_CAP, left: USER_CAP - 4 * PAGE_RATE });
		for (const answer of answers.filter((a) => a.status === 202)) await waitForJob(directus, user, answer.body.generation_id);
	});

	it('a website\'s daily_token_cap counts what that website spent today, refunds given back', async () => {
		const user = await createUser(directus, { balance: 1000 });
		const site = await plannedSite(directus, user, 10);
		const capped = await call(directus, 'PATCH', `/items/pseo/${site.pseoId}`, { token: user.token, body: { daily_token_cap: 15 } });
		expect(capped.status).toBe(200);
		const bulk = (count: number) => call(directus, 'POST', BULK, { token: user.token, body: { pseo_id: site.pseoId, post_count: count } });

		expect(expectEnvelope(await bulk(4), 402).error).toMatch(/website's daily_token_cap of 15 tokens leaves 15 for today/);
		fake.configure({ failRoutes: { [site.routes[1]!]: 'error' } });
		const accepted = await bulk(3);
		expect(accepted.status).toBe(202);
		expect(await waitForJob(directus, user, accepted.body.generation_id)).toMatchObject({ created_count: 2, failed_count: 1 });
		// 15 charged, 5 refunded: 5 left today.
		const page = await call(directus, 'POST', ON_DEMAND, { token: user.token, body: { pseo_id: site.pseoId, post_count: 1 } });
		expect(expectEnvelope(page, 402).error).toMatch(/leaves 5 for today/);
		fake.configure({ failRoutes: {} });
		const last = await bulk(1);
		expect(last.status).toBe(202);
		await waitForJob(directus, user, last.body.generation_id);
		expect(await balanceOf(directus, user.id)).toBe(1000 - 15);
		// Another website of the same user is not held back by this one's cap.
		const other = await plannedSite(directus, user, 2);
		expect((await call(directus, 'POST', ON_DEMAND, { token: user.token, body: { pseo_id: other.pseoId, post_count: 1 } })).status).toBe(202);
	});

	it('regenerate rewrites a post with the owner\'s instructions; the previous version stays as a Directus revision', async () => {
		const user = await createUser(directus, { balance: 100 });
		const site = await plannedSite(directus, user, 2);
		const first = await call(directus, 'POST', ON_DEMAND, { token: user.token, body: { pseo_id: site.pseoId, post_count: 1 } });
		await waitForJob(directus, user, first.body.generation_id);
		const [before] = await adminItems(directus, 'pseo_posts', `filter[pseo_id][_eq]=${site.pseoId}`);
		const instructions = 'Add a short paragraph on weekend opening hours.';

		const res = await call(directus, 'POST', `/pseo-endpoints/posts/${before.id}/regenerate`, { token: user.token, body: { instructions } });
		expect(res.status).toBe(202);
		expect(res.body).toMatchObject({ success: true, status: 'pending', generation_id: expect.any(Number) });
		const job = await waitForJob(directus, user, res.body.generation_id);
		expect(job).toMatchObject({ status: 'completed', requested_count: 1, created_count: 1, failed_count: 0 });
		expect(fake.requests.filter((entry) => entry.route === before.route && entry.instructions === instructions)).toHaveLength(1);

		// One post still, rewritten; the website's count unchanged.
		const posts = await adminItems(directus, 'pseo_posts', `filter[pseo_id][_eq]=${site.pseoId}`);
		expect(posts).toHaveLength(1);
		expect(posts[0]).toMatchObject({ id: before.id, route: before.route, generation_id: res.body.generation_id });
		expect(posts[0].body).toContain(instructions);
		expect(before.body).not.toContain(instructions);
		const [website] = await adminItems(directus, 'pseo', `filter[id][_eq]=${site.pseoId}`);
		expect(website.post_counts_total).toBe(1);

		// The previous version is a revision of the post, and so is the new one.
		const listed = await call(directus, 'GET', `/revisions?filter[collection][_eq]=pseo_posts&filter[item][_eq]=${before.id}&sort=id&fields=data`, { token: directus.adminToken });
		expect(listed.status).toBe(200);
		const versions = listed.body.data.map((revision: { data: { body: string } }) => revision.data.body);
		expect(versions).toEqual([before.body, posts[0].body]);

		// Charged token_per_page; the website is busy while a regeneration runs.
		const ledger = await ledgerOf(directus, user.id);
		expect(ledger.filter((row) => row.reason === 'charge').map((row) => Number(row.amount))).toEqual([-PAGE_RATE, -PAGE_RATE]);
		fake.configure({ holdChat: true });
		const busy = await call(directus, 'POST', `/pseo-endpoints/posts/${before.id}/regenerate`, { token: user.token });
		expect(busy.status).toBe(202);
		expectEnvelope(await call(directus, 'POST', `/pseo-endpoints/posts/${before.id}/regenerate`, { token: user.token }), 409);
		fake.configure({ holdChat: false });
		fake.releaseChat();
		await waitForJob(directus, user, busy.body.generation_id);
	});

	it('regenerate refuses bad input and other users\' posts, and charges nothing then', async () => {
		const user = await createUser(directus, { balance: 100 });
		const site = await plannedSite(directus, user, 2);
		const first = await call(directus, 'POST', ON_DEMAND, { token: user.token, body: { pseo_id: site.pseoId, post_count: 1 } });
		await waitForJob(directus, user, first.body.generation_id);
		const [post] = await adminItems(directus, 'pseo_posts', `filter[pseo_id][_eq]=${site.pseoId}`);
		const path = `/pseo-endpoints/posts/${post.id}/regenerate`;
		for (const body of [{ instructions: 'x'.repeat(2001) }, { instructions: 5 }, { note: 'hi' }, '[1]', '{oops']) {
			expectEnvelope(await call(directus, 'POST', path, { token: user.token, body }), 400);
		}
		expectEnvelope(await call(directus, 'POST', '/pseo-endpoints/posts/abc/regenerate', { token: user.token }), 400);
		expectEnvelope(await call(directus, 'POST', '/pseo-endpoints/posts/99999999/regenerate', { token: user.token }), 404);
		const stranger = await createUser(directus, { balance: 100 });
		expectEnvelope(await call(directus, 'POST', path, { token: stranger.token }), 403);
		expectEnvelope(await call(directus, 'POST', path), 401);
		expect(await balanceOf(directus, user.id)).toBe(100 - PAGE_RATE);
		expect(await balanceOf(directus, stranger.id)).toBe(100);
		// 2,000 characters exactly are fine.
		const ok = await call(directus, 'POST', path, { token: user.token, body: { instructions: 'y'.repeat(2000) } });
		expect(ok.status).toBe(202);
		await waitForJob(directus, user, ok.body.generation_id);
	});
});
