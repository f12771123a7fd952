import { createHmac, timingSafeEqual } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startFakeProvider, type FakeProvider } from './support/fake-provider/server.ts';
import { adminItems, call, createUser, createWebsite, eventually, waitForJob, type TestUser } from './support/api.ts';
import { startDirectus, type DirectusInstance } from './support/directus.ts';
import { describeLegs, LEGS } from './support/legs.ts';
import { ensureWordPress, startWordPress, type WordPressSite } from './support/wordpress.ts';

/*
 * Retired pages come down (docs/publishing.md, "Retired pages"): a sync that retires a page queues the takedown of its
 * published post as a publication of its own. WordPress keeps the post as a draft under the same id and publishes it
 * again in place when the row comes back; a webhook receives a signed post.unpublished event. A takedown whose target
 * is down waits longer after each failed step instead of calling it at every sweep.
 */

const SECRET = 'whsec_retire_0123456789abcdefABCDEF';
/** The first wait after a failed publication step (PSEO_BATCH_POLL_INTERVAL_MS), doubled at each failure in a row. */
const RETRY_BASE_MS = 1000;
const SWEEP_MS = 200;

interface Delivery {
	at: number;
	key: string;
	event: string;
	pseoId: number;
	postId: number;
	valid: boolean;
	status: number;
}

function verify(header: string, body: string): boolean {
	const parts = Object.fromEntries(header.split(',').map((part) => part.split('=') as [string, string]));
	const t = Number(parts['t']);
	if (!Number.isInteger(t) || Math.abs(Date.now() / 1000 - t) > 300 || !parts['v1']) return false;
	const expected = createHmac('sha256', SECRET).update(`${t}.${body}`).digest();
	const given = Buffer.from(parts['v1'], 'hex');
	return given.length === expected.length && timingSafeEqual(given, expected);
}

describeLegs('retired pages come down (%s)', LEGS, (leg) => {
	let fake: FakeProvider;
	let directus: DirectusInstance;
	let wordpress: WordPressSite;
	let receiver: http.Server;
	let origin: string;
	const deliveries: Delivery[] = [];
	/** The receiver's answer to a delivery (the website's own script; 204 by default), or `hold`: no answer at all. */
	const scripts = new Map<number, (delivery: Omit<Delivery, 'status'>) => number | 'hold'>();
	/** Deliveries held without an answer, answered at the end. */
	const held: http.ServerResponse[] = [];

	beforeAll(async () => {
		await ensureWordPress();
		receiver = http.createServer((req, res) => {
			const chunks: Buffer[] = [];
			req.on('data', (chunk: Buffer) => chunks.push(chunk));
			req.on('end', () => {
				// The websites' address too: their sitemap is not found, so nothing is skipped as on the site.
				if (req.method !== 'POST') return void res.writeHead(404).end();
				const body = Buffer.concat(chunks).toString('utf8');
				const payload = JSON.parse(body) as { event: string; website: { id: number }; post: { id: number } };
				const seen = {
					at: Date.now(),
					key: String(req.headers['idempotency-key'] ?? ''),
					event: payload.event,
					pseoId: payload.website.id,
					postId: payload.post.id,
					valid: verify(String(req.headers['x-pseo-signature'] ?? ''), body),
				};
				const status = scripts.get(seen.pseoId)?.(seen) ?? 204;
				if (status === 'hold') return void held.push(res);
				deliveries.push({ ...seen, status });
				res.writeHead(status).end();
			});
		});
		await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
		origin = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;
		[fake, wordpress] = await Promise.all([startFakeProvider(), startWordPress({ name: `retire_${leg}` })]);
		// Its own instance: the retry base and the sweep interval are this suite's point.
		directus = await startDirectus({
			leg,
			env: {
				OPENAI_BASE_URL: fake.url,
				PSEO_ALLOW_PRIVATE_NETWORKS: 'true',
				PSEO_PUBLISH_BACKOFF_MS: '20',
				PSEO_PUBLISH_MAX_ATTEMPTS: '2',
				PSEO_QUALITY_MIN_WORDS: '0',
				PSEO_BATCH_POLL_INTERVAL_MS: String(RETRY_BASE_MS),
				PSEO_SWEEP_INTERVAL_MS: String(SWEEP_MS),
				// A publication held by a killed instance is taken over within seconds.
				PSEO_LEASE_MS: '3000',
			},
		});
	}, 240_000);

	afterAll(async () => {
		await directus?.dispose();
		await Promise.all([fake?.close(), wordpress?.stop()]);
		for (const res of held) res.destroy();
		await new Promise<void>((resolve) => receiver?.close(() => resolve()));
	});

	const template = { route: '/{city}', title: 'Plumbers in {city}', priority: '{rank}', facts: ['city', 'price_eur'] };
	const CITIES = [
		{ city: 'Leeds', rank: 3, price_eur: 95 },
		{ city: 'York', rank: 2, price_eur: 89 },
		{ city: 'Bath', rank: 1, price_eur: 70 },
	];

	async function sync(user: TestUser, pseoId: number, rows: Record<string, unknown>[]): Promise<Record<string, number>> {
		const res = await call(directus, 'POST', '/pseo-endpoints/plan/import', {
			token: user.token,
			body: { pseo_id: pseoId, language_code: 'en-GB', template, rows, mode: 'sync', source: 'branches' },
		});
		expect(res.status, JSON.stringify(res.body)).toBe(200);
		return res.body.data;
	}

	/** A website synced from CITIES, every page generated, with `target` set. */
	async function website(target: Record<string, unknown>): Promise<{ user: TestUser; pseoId: number; posts: Map<string, Record<string, any>> }> {
		const user = await createUser(directus, { balance: 500 });
		const { id: pseoId } = await createWebsite(directus, user, { website_url: origin });
		expect(await sync(user, pseoId, CITIES)).toMatchObject({ added: 3 });
		const bulk = await call(directus, 'POST', '/pseo-endpoints/trigger/bulk-generation', { token: user.token, body: { pseo_id: pseoId, post_count: 3 } });
		expect(await waitForJob(directus, user, bulk.body.generation_id)).toMatchObject({ status: 'completed', created_count: 3 });
		const saved = await call(directus, 'PUT', `/pseo-endpoints/pseo/${pseoId}/publishing`, { token: user.token, body: target });
		expect(saved.status, JSON.stringify(saved.body)).toBe(200);
		return { user, pseoId, posts: await postsOf(pseoId) };
	}

	async function postsOf(pseoId: number): Promise<Map<string, Record<string, any>>> {
		const posts = await adminItems(directus, 'pseo_posts', `filter[pseo_id][_eq]=${pseoId}&fields=id,route,retired,remote_id,remote_url,published_hash`);
		return new Map(posts.map((post) => [post.route as string, post]));
	}

	async function publish(user: TestUser, pseoId: number): Promise<Record<string, any>> {
		const res = await call(directus, 'POST', '/pseo-endpoints/publish', { token: user.token, body: { pseo_id: pseoId, status: 'publish' } });
		expect(res.status, JSON.stringify(res.body)).toBe(202);
		return publication(user, res.body.publication_id);
	}

	async function publication(user: TestUser, id: number, timeoutMs = 60_000): Promise<Record<string, any>> {
		return eventually(
			async () => {
				const read = await call(directus, 'GET', `/pseo-endpoints/publications/${id}`, { token: user.token });
				return ['completed', 'failed'].includes(read.body.data?.status) ? read.body.data : null;
			},
			timeoutMs,
			`publication ${id}`,
		);
	}

	/** The takedown publications a sync queued for the website, oldest first. */
	const takedowns = (pseoId: number) => adminItems(directus, 'pseo_publications', `filter[pseo_id][_eq]=${pseoId}&filter[phase][_eq]=takedown&sort=id`);

	it('on WordPress, a retired page\'s post becomes a draft under the same id, and is published again in place when its row comes back', async () => {
		const { user, pseoId, posts } = await website({ target: 'wordpress', url: wordpress.url, username: wordpress.username, application_password: wordpress.applicationPassword });
		expect(await publish(user, pseoId)).toMatchObject({ status: 'completed', created_count: 3, failed_count: 0 });
		const published = await postsOf(pseoId);
		const yorkId = Number(published.get('/york')!.remote_id);
		const remote = async (id: number) => (await wordpress.request('GET', `/wp/v2/posts/${id}`, undefined, { context: 'edit' })).body;
		expect((await remote(yorkId)).status).toBe('publish');

		// York's row is gone: its page is retired, and its post comes down without another click.
		expect(await sync(user, pseoId, CITIES.filter((row) => row.city !== 'York'))).toMatchObject({ retired: 1, unchanged: 2 });
		const [takedown] = await takedowns(pseoId);
		expect(takedown).toMatchObject({ requested_count: 1, post_ids: [posts.get('/york')!.id] });
		expect(await publication(user, takedown.id)).toMatchObject({ status: 'completed', target: 'wordpress', updated_count: 1, failed_count: 0, last_error: null });
		expect(await remote(yorkId)).toMatchObject({ id: yorkId, status: 'draft' });
		for (const route of ['/leeds', '/bath']) expect((await remote(Number(published.get(route)!.remote_id))).status).toBe('publish');
		// Kept in Directus, retired, with its remote id; no URL, so no page links to it.
		expect((await postsOf(pseoId)).get('/york')).toMatchObject({ retired: true, remote_id: String(yorkId), remote_url: null });
		// A publication meanwhile leaves it out.
		expect(await publish(user, pseoId)).toMatchObject({ status: 'completed', requested_count: 2, created_count: 0, failed_count: 0 });
		expect((await remote(yorkId)).status).toBe('draft');

		// The row comes back: the post is no longer retired, and the next publication puts it back in place.
		expect(await sync(user, pseoId, CITIES)).toMatchObject({ updated: 1, retired: 0 });
		expect((await postsOf(pseoId)).get('/york')).toMatchObject({ retired: false });
		expect(await publish(user, pseoId)).toMatchObject({ status: 'completed', requested_count: 3, created_count: 0, failed_count: 0 });
		expect(await remote(yorkId)).toMatchObject({ id: yorkId, status: 'publish' });
		const york = (await postsOf(pseoId)).get('/york')!;
		expect(york).toMatchObject({ retired: false, remote_id: String(yorkId), remote_url: expect.any(String) });
		// One WordPress post per route, the same three as at first.
		const ours = (await wordpress.listPosts()).filter((post) => new RegExp(`pseo_ref_${pseoId}_\\d+`).test(post.content));
		expect(ours.map((post) => post.id).sort()).toEqual([...published.values()].map((post) => Number(post.remote_id)).sort());
	});

	it('a webhook target receives a signed post.unpublished event for a retired page, and the post again as created when its row comes back', async () => {
		const { user, pseoId, posts } = await website({ target: 'webhook', url: `${origin}/hooks`, secret: SECRET });
		expect(await publish(user, pseoId)).toMatchObject({ status: 'completed', created_count: 3 });
		const bath = posts.get('/bath')!;
		const firstKey = deliveries.find((delivery) => delivery.pseoId === pseoId && delivery.postId === bath.id && delivery.event === 'post.created')!.key;

		expect(await sync(user, pseoId, CITIES.filter((row) => row.city !== 'Bath'))).toMatchObject({ retired: 1 });
		const [takedown] = await takedowns(pseoId);
		expect(await publication(user, takedown.id)).toMatchObject({ status: 'completed', target: 'webhook', updated_count: 1 });
		const unpublished = deliveries.filter((delivery) => delivery.pseoId === pseoId && delivery.event === 'post.unpublished');
		expect(unpublished).toEqual([expect.objectContaining({ postId: bath.id, valid: true, status: 204, key: `pseo-${pseoId}-${bath.id}-unpublished-${takedown.id}` })]);
		expect((await postsOf(pseoId)).get('/bath')).toMatchObject({ retired: true });

		await sync(user, pseoId, CITIES);
		expect(await publish(user, pseoId)).toMatchObject({ status: 'completed', created_count: 1, failed_count: 0 });
		const again = deliveries.filter((delivery) => delivery.pseoId === pseoId && delivery.postId === bath.id).at(-1)!;
		// The same version as before the takedown, under a new key: a receiver that did the first delivery does this one.
		expect(again).toMatchObject({ event: 'post.created', valid: true, status: 204 });
		expect(again.key).not.toBe(firstKey);
		expect(again.key.startsWith(firstKey)).toBe(true);
	});

	it('a takedown whose target is down is retried later each time (back-off), not at every sweep, and completes once the target answers', async () => {
		const { user, pseoId, posts } = await website({ target: 'webhook', url: `${origin}/hooks`, secret: SECRET });
		expect(await publish(user, pseoId)).toMatchObject({ status: 'completed', created_count: 3 });
		// The receiver is down for the takedown's first four steps (each step tries PSEO_PUBLISH_MAX_ATTEMPTS = 2 times).
		const steps: number[] = [];
		scripts.set(pseoId, (delivery) => {
			if (delivery.event !== 'post.unpublished') return 204;
			const attempts = deliveries.filter((seen) => seen.pseoId === pseoId && seen.event === 'post.unpublished').length;
			if (attempts % 2 === 0) steps.push(delivery.at);
			return attempts < 8 ? 503 : 204;
		});
		expect(await sync(user, pseoId, CITIES.filter((row) => row.city !== 'Leeds'))).toMatchObject({ retired: 1 });
		const [takedown] = await takedowns(pseoId);
		// While it waits, its record says why and how often, and asks for attention.
		const waiting = await eventually(async () => {
			const read = await call(directus, 'GET', `/pseo-endpoints/publications/${takedown.id}`, { token: user.token });
			return read.body.data.last_error?.attempts >= 2 ? read.body.data : null;
		}, 30_000, 'a second failed step');
		expect(waiting).toMatchObject({ status: 'running', attention: true, last_error: { code: 'target_unavailable', message: expect.stringContaining('503') } });
		const done = await publication(user, takedown.id, 90_000);
		expect(done).toMatchObject({ status: 'completed', updated_count: 1, failed_count: 0, last_error: null, attention: false });
		expect(steps).toHaveLength(5);
		// The waits between steps: 1, 2, 4 and 8 times the base (a sweep, every 200 ms, would have tried 40 times meanwhile).
		const waits = steps.slice(1).map((at, i) => at - steps[i]!);
		for (const [i, wait] of waits.entries()) expect(wait, JSON.stringify(waits)).toBeGreaterThanOrEqual(RETRY_BASE_MS * 2 ** i - 50);
		for (const [i, wait] of waits.slice(1).entries()) expect(wait, JSON.stringify(waits)).toBeGreaterThan(waits[i]! * 1.5);
		expect((await postsOf(pseoId)).get('/leeds')).toMatchObject({ id: posts.get('/leeds')!.id, retired: true });
	}, 120_000);

	it('a sync that committed has its takedown done even when the instance is killed (kill -9) while the takedown waits on its target', async () => {
		const { user, pseoId, posts } = await website({ target: 'webhook', url: `${origin}/hooks`, secret: SECRET });
		expect(await publish(user, pseoId)).toMatchObject({ status: 'completed', created_count: 3 });
		let holding = true;
		scripts.set(pseoId, (delivery) => (delivery.event === 'post.unpublished' && holding ? 'hold' : 204));
		const before = held.length;
		expect(await sync(user, pseoId, CITIES.filter((row) => row.city !== 'York'))).toMatchObject({ retired: 1 });
		const [takedown] = await takedowns(pseoId);
		await eventually(async () => held.length > before, 30_000, 'the takedown\'s delivery');
		await directus.kill();
		holding = false;
		await directus.restart();
		// The restarted instance takes the takedown over once the dead one's lease has lapsed, and delivers it.
		expect(await publication(user, takedown.id, 60_000)).toMatchObject({ status: 'completed', updated_count: 1, failed_count: 0 });
		const york = posts.get('/york')!;
		const delivered = deliveries.filter((delivery) => delivery.pseoId === pseoId && delivery.event === 'post.unpublished');
		expect(delivered).toEqual([expect.objectContaining({ postId: york.id, valid: true, status: 204, key: `pseo-${pseoId}-${york.id}-unpublished-${takedown.id}` })]);
		expect((await postsOf(pseoId)).get('/york')).toMatchObject({ retired: true, published_hash: `unpublished:${takedown.id}` });
	}, 120_000);
});
