import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { adminItems, balanceOf, call, createUser, createWebsite, eventually, expectEnvelope, ledgerOf, seedPlan, waitForJob, type TestUser } from './support/api.ts';
import { useSharedDirectus } from './support/directus.ts';
import { describeLegs, ENGINE_ENV, LEGS } from './support/legs.ts';
import { postsByRoute, syncPrices, type PriceRow } from './support/synced-data.ts';
import { startWebhookReceiver, type WebhookReceiver } from './support/webhook-receiver.ts';

/*
 * Refresh jobs (docs/api.md, "Refresh stale posts"): POST /trigger/refresh-generation rewrites a website's stale posts,
 * highest priority first, from the facts their plan pages hold now, as a bulk job of kind `refresh`: charged per page,
 * a failed page refunded, each new version replacing its post with the previous one kept as a revision; the refreshed
 * posts a publishing target has are published again in place. And the kind every job now names.
 */

const REFRESH = '/pseo-endpoints/trigger/refresh-generation';
const BULK = '/pseo-endpoints/trigger/bulk-generation';
/** PSEO_TOKEN_PER_BATCH_PAGE's default, which the engine's instance keeps. */
const BATCH_RATE = 5;
const SECRET = 'whsec_refresh_0123456789abcdefABCDEF';

describeLegs('refresh jobs on %s', LEGS, (leg) => {
	const { directus, fake } = useSharedDirectus(leg, ENGINE_ENV);
	let receiver: WebhookReceiver;

	beforeAll(async () => {
		receiver = await startWebhookReceiver(SECRET);
	});
	afterAll(async () => {
		await receiver?.close();
	});

	const refresh = (user: TestUser, body: Record<string, unknown>, key?: string) =>
		call(directus, 'POST', REFRESH, { token: user.token, body, ...(key ? { headers: { 'idempotency-key': key } } : {}) });
	/** The batches the fake created since `from` (a request-log position): each one's routes and their prompts' facts, in input order. */
	const batchedSince = (from: number) =>
		fake.requests
			.slice(from)
			.filter((entry) => entry.method === 'POST' && entry.path === '/v1/batches' && entry.status === 200)
			.map((entry) => entry.routes!.map((route, line) => [route, entry.lineFacts![line]]));

	/** A website whose priced pages all have a post, then synced with `changed` rows: their posts are stale. */
	async function websiteWithStalePosts(user: TestUser, rows: PriceRow[], changed: PriceRow[]): Promise<number> {
		const { id: pseoId } = await createWebsite(directus, user);
		expect((await syncPrices(directus, user, pseoId, rows)).body.data).toMatchObject({ added: rows.length });
		const bulk = await call(directus, 'POST', BULK, { token: user.token, body: { pseo_id: pseoId, post_count: rows.length } });
		expect(await waitForJob(directus, user, bulk.body.generation_id)).toMatchObject({ status: 'completed', created_count: rows.length });
		const byCity = new Map(changed.map((row) => [row.city, row]));
		expect((await syncPrices(directus, user, pseoId, rows.map((row) => byCity.get(row.city) ?? row))).body.data).toMatchObject({ updated: changed.length });
		return pseoId;
	}

	it('a changed fact marks the post stale; a refresh rewrites exactly the stale posts from their current facts, highest priority first, clears stale, keeps a revision, and refunds a page the provider fails', async () => {
		const user = await createUser(directus, { balance: 200 });
		const rows = [
			{ city: 'Leeds', rank: 9, price_eur: 4870 },
			{ city: 'York', rank: 8, price_eur: 3890 },
			{ city: 'Ely', rank: 5, price_eur: 2770 },
			{ city: 'Bath', rank: 3, price_eur: 1660 },
		];
		const pseoId = await websiteWithStalePosts(user, rows, [
			{ city: 'Bath', rank: 3, price_eur: 1690 },
			{ city: 'Leeds', rank: 9, price_eur: 5130 },
			{ city: 'Ely', rank: 5, price_eur: 2790 },
		]);
		const before = await postsByRoute(directus, pseoId);
		expect([...before].filter(([, post]) => post.stale).map(([route]) => route).sort()).toEqual(['/bath', '/ely', '/leeds']);
		expect(before.get('/york')).toMatchObject({ stale: false, stale_since: null });

		// The first one: the stale post of the highest priority, and only that one.
		let balance = await balanceOf(directus, user.id);
		let from = fake.requests.length;
		const first = await refresh(user, { pseo_id: pseoId, post_count: 1 });
		expect(first.status).toBe(202);
		expect(first.body).toMatchObject({ success: true, status: 'pending', generation_id: expect.any(Number) });
		expect(await balanceOf(directus, user.id)).toBe(balance - BATCH_RATE);
		expect(await waitForJob(directus, user, first.body.generation_id)).toMatchObject({ kind: 'refresh', status: 'completed', requested_count: 1, created_count: 1 });
		// The provider's prompt carried the new price.
		expect(batchedSince(from)).toEqual([[['/leeds', { city: 'Leeds', price_eur: 5130 }]]]);
		let after = await postsByRoute(directus, pseoId);
		expect(after.get('/leeds')).toMatchObject({ id: before.get('/leeds')!.id, stale: false, stale_since: null, generation_id: first.body.generation_id });
		// The page states it.
		expect(after.get('/leeds')!.body).toContain('5130');
		expect(after.get('/leeds')!.body).not.toContain('4870');
		const revisions = await call(directus, 'GET', `/revisions?filter[collection][_eq]=pseo_posts&filter[item][_eq]=${before.get('/leeds')!.id}&fields=data`, { token: directus.adminToken });
		expect(revisions.body.data.map((revision: { data: { body: string } }) => revision.data.body)).toEqual(expect.arrayContaining([before.get('/leeds')!.body]));

		// The rest of them, one failing at the provider: refunded, and still stale.
		fake.configure({ failRoutes: { '/bath': 'error' } });
		balance = await balanceOf(directus, user.id);
		from = fake.requests.length;
		const rest = await refresh(user, { pseo_id: pseoId });
		expect(rest.status).toBe(202);
		expect(await balanceOf(directus, user.id)).toBe(balance - 2 * BATCH_RATE);
		const job = await waitForJob(directus, user, rest.body.generation_id);
		expect(job).toMatchObject({ kind: 'refresh', status: 'failed', requested_count: 2, created_count: 1, failed_count: 1, failed_routes: [{ route: '/bath', error: expect.any(String) }] });
		expect(batchedSince(from)).toEqual([
			[
				['/ely', { city: 'Ely', price_eur: 2790 }],
				['/bath', { city: 'Bath', price_eur: 1690 }],
			],
		]);
		expect(await balanceOf(directus, user.id)).toBe(balance - BATCH_RATE);
		expect((await ledgerOf(directus, user.id)).filter((row) => row.generation_id === rest.body.generation_id && row.route === '/bath' && row.reason === 'refund')).toHaveLength(1);
		after = await postsByRoute(directus, pseoId);
		expect(after.get('/ely')).toMatchObject({ stale: false, generation_id: rest.body.generation_id });
		expect(after.get('/ely')!.body).toContain('2790');
		expect(after.get('/bath')).toMatchObject({ stale: true, stale_since: before.get('/bath')!.stale_since, body: before.get('/bath')!.body });
		expect(after.get('/york')).toMatchObject({ stale: false, generation_id: before.get('/york')!.generation_id, body: before.get('/york')!.body });
		// Rewritten posts are not new ones: the website counts its four.
		const [website] = await adminItems(directus, 'pseo', `filter[id][_eq]=${pseoId}&fields=post_counts_total`);
		expect(website.post_counts_total).toBe(4);
	});

	it("an editor's change to a page's facts through the items API marks its post stale; a write of the same facts leaves a post fresh", async () => {
		const user = await createUser(directus, { balance: 100 });
		const rows = [
			{ city: 'Leeds', rank: 9, price_eur: 4870 },
			{ city: 'York', rank: 8, price_eur: 3890 },
		];
		const pseoId = await websiteWithStalePosts(user, rows, []);
		const pages = new Map(
			(await adminItems(directus, 'pseo_plan_pages', `filter[pseo_id][_eq]=${pseoId}&fields=id,route,facts`)).map((page) => [page.route as string, page]),
		);
		const edit = (route: string, facts: Record<string, unknown>) =>
			call(directus, 'PATCH', `/items/pseo_plan_pages/${pages.get(route)!.id}`, { token: user.token, body: { facts } });
		expect((await edit('/leeds', { city: 'Leeds', price_eur: 4990 })).status).toBe(200);
		expect((await edit('/york', { ...pages.get('/york')!.facts })).status).toBe(200);
		const posts = await eventually(async () => {
			const found = await postsByRoute(directus, pseoId);
			return found.get('/leeds')!.stale ? found : null;
		}, 15_000, "the edited page's post to be stale");
		expect(posts.get('/leeds')!.stale_since).toEqual(expect.any(String));
		expect(posts.get('/york')).toMatchObject({ stale: false, stale_since: null });
		// A refresh now rewrites it from the editor's figure.
		const from = fake.requests.length;
		const job = await refresh(user, { pseo_id: pseoId });
		expect(job.status).toBe(202);
		expect(await waitForJob(directus, user, job.body.generation_id)).toMatchObject({ kind: 'refresh', status: 'completed', created_count: 1 });
		expect(batchedSince(from)).toEqual([[['/leeds', { city: 'Leeds', price_eur: 4990 }]]]);
	});

	it('POST /trigger/refresh-generation: 409 while the website has an active job, 400 with nothing stale, 402 on a short balance, and an Idempotency-Key replays its answer', async () => {
		const user = await createUser(directus, { balance: 100 });
		const rows = [
			{ city: 'Hull', rank: 2, price_eur: 1010 },
			{ city: 'Wells', rank: 1, price_eur: 1020 },
		];
		const { id: fresh } = await createWebsite(directus, user);
		expect((await syncPrices(directus, user, fresh, rows)).body.data).toMatchObject({ added: 2 });
		// Nothing written yet, so nothing stale.
		expect(expectEnvelope(await refresh(user, { pseo_id: fresh }), 400).error).toMatch(/no stale post to refresh/);
		expectEnvelope(await refresh(user, { pseo_id: fresh, post_count: 0 }), 400);
		expectEnvelope(await refresh(user, { pseo_id: fresh, republish: 'no' }), 400);

		const pseoId = await websiteWithStalePosts(user, rows, [{ city: 'Hull', rank: 2, price_eur: 1110 }]);
		// A short balance: nothing is accepted, nothing charged.
		await call(directus, 'PATCH', `/users/${user.id}`, { token: directus.adminToken, body: { pseo_token_balance: BATCH_RATE - 1 } });
		expectEnvelope(await refresh(user, { pseo_id: pseoId }), 402);
		expect(await balanceOf(directus, user.id)).toBe(BATCH_RATE - 1);
		await call(directus, 'PATCH', `/users/${user.id}`, { token: directus.adminToken, body: { pseo_token_balance: 50 } });

		// A job held at the provider keeps the website busy.
		fake.configure({ holdBatches: true });
		const key = randomUUID();
		const accepted = await refresh(user, { pseo_id: pseoId }, key);
		expect(accepted.status).toBe(202);
		expectEnvelope(await refresh(user, { pseo_id: pseoId }), 409);
		const replayed = await refresh(user, { pseo_id: pseoId }, key);
		expect(replayed.status).toBe(202);
		expect(replayed.headers.get('idempotent-replayed')).toBe('true');
		expect(replayed.body.generation_id).toBe(accepted.body.generation_id);
		expect(await balanceOf(directus, user.id)).toBe(50 - BATCH_RATE);
		fake.releaseBatches();
		fake.configure({ holdBatches: false });
		expect(await waitForJob(directus, user, accepted.body.generation_id)).toMatchObject({ kind: 'refresh', status: 'completed', created_count: 1 });
		// Refreshed: nothing is stale any more.
		expect(expectEnvelope(await refresh(user, { pseo_id: pseoId }), 400).error).toMatch(/no stale post/);
	});

	it('every job names its kind, in the list and on its record (a refresh\'s is checked above): on_demand, bulk, retry and regenerate; a job stored without one answers the kind its mode says', async () => {
		const user = await createUser(directus, { balance: 200 });
		const { id: pseoId } = await createWebsite(directus, user);
		await seedPlan(directus, user, pseoId, [
			{ route: '/kind/a', title: 'A', priority: 3 },
			{ route: '/kind/b', title: 'B', priority: 2 },
			{ route: '/kind/c', title: 'C', priority: 1 },
		]);
		const started = async (path: string, body: Record<string, unknown> | undefined) => {
			const res = await call(directus, 'POST', path, { token: user.token, ...(body ? { body } : {}) });
			expect(res.status, JSON.stringify(res.body)).toBe(202);
			return waitForJob(directus, user, res.body.generation_id);
		};
		const onDemand = await started('/pseo-endpoints/trigger/on-demand-generation', { pseo_id: pseoId, post_count: 1 });
		fake.configure({ failRoutes: { '/kind/c': 'error' } });
		const bulk = await started(BULK, { pseo_id: pseoId, post_count: 2 });
		expect(bulk).toMatchObject({ status: 'failed', failed_count: 1 });
		fake.configure({ failRoutes: {} });
		const retry = await started(`/pseo-endpoints/generations/${bulk.id}/retry`, undefined);
		const [post] = await adminItems(directus, 'pseo_posts', `filter[pseo_id][_eq]=${pseoId}&filter[route][_eq]=/kind/a&fields=id`);
		const regenerate = await started(`/pseo-endpoints/posts/${post.id}/regenerate`, {});
		expect([onDemand.kind, bulk.kind, retry.kind, regenerate.kind]).toEqual(['on_demand', 'bulk', 'retry', 'regenerate']);
		const listed = await call(directus, 'GET', `/pseo-endpoints/generations?pseo_id=${pseoId}`, { token: user.token });
		expect(listed.body.data.map((job: { id: number; kind: string }) => [job.id, job.kind])).toEqual([
			[regenerate.id, 'regenerate'],
			[retry.id, 'retry'],
			[bulk.id, 'bulk'],
			[onDemand.id, 'on_demand'],
		]);

		// Jobs stored before jobs recorded their kind: derived from the mode and the post a regeneration rewrites.
		for (const job of [onDemand, bulk, regenerate]) {
			expect((await call(directus, 'PATCH', `/items/pseo_generations/${job.id}`, { token: directus.adminToken, body: { kind: null } })).status).toBe(200);
		}
		const read = async (id: number) => (await call(directus, 'GET', `/pseo-endpoints/generations/${id}`, { token: user.token })).body.data.kind;
		expect([await read(onDemand.id), await read(bulk.id), await read(regenerate.id)]).toEqual(['on_demand', 'bulk', 'regenerate']);
	});

	it('a refreshed post that was published is published again in place: its webhook receives a signed post.updated, unless the refresh says republish: false', async () => {
		const user = await createUser(directus, { balance: 200 });
		const rows = [
			{ city: 'Derby', rank: 3, price_eur: 7310 },
			{ city: 'Poole', rank: 2, price_eur: 7320 },
			{ city: 'Ripon', rank: 1, price_eur: 7330 },
		];
		const { id: pseoId } = await createWebsite(directus, user);
		expect((await syncPrices(directus, user, pseoId, rows)).body.data).toMatchObject({ added: 3 });
		const bulk = await call(directus, 'POST', BULK, { token: user.token, body: { pseo_id: pseoId, post_count: 3 } });
		expect(await waitForJob(directus, user, bulk.body.generation_id)).toMatchObject({ status: 'completed' });
		const posts = await postsByRoute(directus, pseoId);
		// Derby and Poole are on the site; Ripon never was.
		expect((await call(directus, 'PUT', `/pseo-endpoints/pseo/${pseoId}/publishing`, { token: user.token, body: { target: 'webhook', url: receiver.url, secret: SECRET } })).status).toBe(200);
		const published = await call(directus, 'POST', '/pseo-endpoints/publish', { token: user.token, body: { pseo_id: pseoId, post_ids: [posts.get('/derby')!.id, posts.get('/poole')!.id] } });
		expect(published.status).toBe(202);
		const publication = (id: number) => call(directus, 'GET', `/pseo-endpoints/publications/${id}`, { token: user.token }).then((res) => res.body.data);
		await eventually(async () => (await publication(published.body.publication_id)).status === 'completed', 60_000, 'the first publication');
		const ours = () => receiver.deliveries.filter((delivery) => delivery.payload.website?.id === pseoId);
		expect(ours().map((delivery) => delivery.payload.event)).toEqual(['post.created', 'post.created']);

		// Every price changes; the refresh rewrites all three and sends the two the receiver has, as updates.
		expect((await syncPrices(directus, user, pseoId, rows.map((row) => ({ ...row, price_eur: row.price_eur + 100 })))).body.data).toMatchObject({ updated: 3 });
		const refreshed = await refresh(user, { pseo_id: pseoId });
		expect(refreshed.status).toBe(202);
		expect(await waitForJob(directus, user, refreshed.body.generation_id)).toMatchObject({ status: 'completed', created_count: 3 });
		const updates = await eventually(async () => {
			const sent = ours().slice(2);
			return sent.length >= 2 ? sent : null;
		}, 60_000, 'the refreshed posts at the webhook');
		expect(updates.every((delivery) => delivery.valid)).toBe(true);
		expect(updates.map((delivery) => [delivery.payload.event, delivery.payload.post.id]).sort()).toEqual(
			[
				['post.updated', posts.get('/derby')!.id],
				['post.updated', posts.get('/poole')!.id],
			].sort(),
		);
		const derby = updates.find((delivery) => delivery.payload.post.id === posts.get('/derby')!.id)!;
		expect(derby.payload.post.markdown).toContain('7410');
		expect(derby.payload.post.facts).toEqual({ city: 'Derby', price_eur: 7410 });
		// Ripon, never published, stays off the site: the republish, the website's second publication, has ended with
		// the two updates alone.
		const publications = () => adminItems(directus, 'pseo_publications', `filter[pseo_id][_eq]=${pseoId}&sort=id&fields=id,status`);
		await eventually(async () => {
			const rows = await publications();
			return rows.length === 2 && rows[1]!.status === 'completed';
		}, 60_000, 'the republish to end');
		expect(ours()).toHaveLength(4);

		// republish: false rewrites the posts and leaves the site as it is.
		expect((await syncPrices(directus, user, pseoId, rows.map((row) => ({ ...row, price_eur: row.price_eur + 200 })))).body.data).toMatchObject({ updated: 3 });
		const quiet = await refresh(user, { pseo_id: pseoId, republish: false });
		expect(await waitForJob(directus, user, quiet.body.generation_id)).toMatchObject({ status: 'completed', created_count: 3 });
		expect((await postsByRoute(directus, pseoId)).get('/derby')!.body).toContain('7510');
		// The job owes no republish from its acceptance on, so no sweep makes one: nothing more reached the site.
		const [quietRow] = await adminItems(directus, 'pseo_generations', `filter[id][_eq]=${quiet.body.generation_id}&fields=republish_pending`);
		expect(quietRow.republish_pending).toBe(false);
		expect(await publications()).toHaveLength(2);
		expect(ours()).toHaveLength(4);
	});
});
