import { createHmac, timingSafeEqual } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeProvider, type FakeProvider } from './support/fake-provider/server.ts';
import { adminItems, call, createUser, createWebsite, eventually, expectEnvelope, seedPlan, waitForJob, type TestUser } from './support/api.ts';
import { shareDirectus, startDirectus, type DirectusInstance } from './support/directus.ts';
import { legAvailable } from './support/legs.ts';
import { structuredDataProblems } from './support/structured-data.ts';

/*
 * Webhook publishing against a loopback receiver that verifies every delivery as docs/publishing.md tells a receiver to:
 * the signature over "t.body", a bounded age (replays refused), and the Idempotency-Key per post version. And the
 * address guard at the API, for both targets, on an instance that does not allow private networks.
 */

const LEG = 'sqlite' as const;
const SECRET = 'whsec_test_0123456789abcdefABCDEF';
const TOLERANCE_S = 300;

interface Delivery {
	key: string;
	signature: string;
	body: string;
	valid: boolean;
	status: number;
}

/** The receiver's check, as documented: HMAC-SHA256 of "t.body", compared in constant time, and no older than 5 minutes. */
function verify(header: string, body: string, now = Date.now()): boolean {
	const parts = Object.fromEntries(header.split(',').map((part) => part.split('=') as [string, string]));
	const t = Number(parts['t']);
	if (!Number.isInteger(t) || Math.abs(now / 1000 - t) > TOLERANCE_S || !parts['v1']) return false;
	const expected = createHmac('sha256', SECRET).update(`${t}.${body}`).digest();
	const given = Buffer.from(parts['v1'], 'hex');
	return given.length === expected.length && timingSafeEqual(given, expected);
}

describe.skipIf(!legAvailable(LEG))('publishing to a signed webhook', () => {
	let fake: FakeProvider;
	let directus: DirectusInstance;
	let guarded: DirectusInstance;
	let receiver: http.Server;
	let receiverUrl: string;
	const deliveries: Delivery[] = [];
	/** Answers per delivery attempt of one idempotency key: the receiver's script. */
	let answer: (key: string, attempt: number) => { status: number; headers?: Record<string, string> } = () => ({ status: 200 });

	beforeAll(async () => {
		receiver = http.createServer((req, res) => {
			const chunks: Buffer[] = [];
			req.on('data', (chunk: Buffer) => chunks.push(chunk));
			req.on('end', () => {
				const body = Buffer.concat(chunks).toString('utf8');
				const key = String(req.headers['idempotency-key'] ?? '');
				const signature = String(req.headers['x-pseo-signature'] ?? '');
				const attempt = deliveries.filter((delivery) => delivery.key === key).length + 1;
				const { status, headers } = answer(key, attempt);
				deliveries.push({ key, signature, body, valid: verify(signature, body), status });
				res.writeHead(status, headers).end();
			});
		});
		await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
		receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hooks/pseo`;
		fake = await startFakeProvider();
		[directus, guarded] = await Promise.all([
			startDirectus({
				leg: LEG,
				env: { OPENAI_BASE_URL: fake.url, PSEO_ALLOW_PRIVATE_NETWORKS: 'true', PSEO_PUBLISH_BACKOFF_MS: '20', PSEO_PUBLISH_MAX_ATTEMPTS: '3', PSEO_QUALITY_MIN_WORDS: '0' },
			}),
			// The address guard's instance allows no private network, as Directus's default one does: the shared one.
			shareDirectus(LEG),
		]);
	}, 180_000);

	afterAll(async () => {
		await Promise.all([directus?.dispose(), guarded?.dispose()]);
		await fake?.close();
		await new Promise<void>((resolve) => receiver?.close(() => resolve()));
	});

	async function websiteWithPosts(count: number): Promise<{ user: TestUser; pseoId: number; posts: Record<string, any>[] }> {
		const user = await createUser(directus, { balance: 500 });
		const { id: pseoId } = await createWebsite(directus, user);
		await seedPlan(directus, user, pseoId, Array.from({ length: count }, (_, i) => ({ route: `/hook/page-${i + 1}`, title: `Hook page ${i + 1}`, priority: count - i })));
		const res = await call(directus, 'POST', '/pseo-endpoints/trigger/bulk-generation', { token: user.token, body: { pseo_id: pseoId, post_count: count } });
		expect((await waitForJob(directus, user, res.body.generation_id)).created_count).toBe(count);
		return { user, pseoId, posts: await adminItems(directus, 'pseo_posts', `filter[pseo_id][_eq]=${pseoId}&sort=id`) };
	}

	async function publishAndWait(user: TestUser, body: Record<string, unknown>): Promise<Record<string, any>> {
		const res = await call(directus, 'POST', '/pseo-endpoints/publish', { token: user.token, body });
		expect(res.status, JSON.stringify(res.body)).toBe(202);
		return eventually(async () => {
			const read = await call(directus, 'GET', `/pseo-endpoints/publications/${res.body.publication_id}`, { token: user.token });
			return ['completed', 'failed'].includes(read.body.data?.status) ? read.body.data : null;
		}, 60_000, 'publication');
	}

	it('a webhook target needs a secret of 16 characters or more, and never shows it', async () => {
		const user = await createUser(directus, { balance: 10 });
		const { id } = await createWebsite(directus, user);
		expectEnvelope(await call(directus, 'PUT', `/pseo-endpoints/pseo/${id}/publishing`, { token: user.token, body: { target: 'webhook', url: receiverUrl } }), 400);
		expectEnvelope(await call(directus, 'PUT', `/pseo-endpoints/pseo/${id}/publishing`, { token: user.token, body: { target: 'webhook', url: receiverUrl, secret: 'short' } }), 400);
		expectEnvelope(await call(directus, 'PUT', `/pseo-endpoints/pseo/${id}/publishing`, { token: user.token, body: { target: 'webhook', url: receiverUrl, secret: SECRET, username: 'x' } }), 400);
		const saved = await call(directus, 'PUT', `/pseo-endpoints/pseo/${id}/publishing`, { token: user.token, body: { target: 'webhook', url: receiverUrl, secret: SECRET } });
		expect(saved.status).toBe(200);
		expect(saved.body.data).toMatchObject({ pseo_id: id, target: 'webhook', url: receiverUrl, has_credentials: true });
		expect(JSON.stringify(saved.body)).not.toContain(SECRET);
		const read = await call(directus, 'GET', `/pseo-endpoints/pseo/${id}/publishing`, { token: user.token });
		expect(JSON.stringify(read.body)).not.toContain(SECRET);
		expect(directus.output()).not.toContain(SECRET);
	});

	it('delivers signed posts, retries until a 2xx with the same Idempotency-Key, and skips what was delivered', async () => {
		const { user, pseoId, posts } = await websiteWithPosts(3);
		expect((await call(directus, 'PUT', `/pseo-endpoints/pseo/${pseoId}/publishing`, { token: user.token, body: { target: 'webhook', url: receiverUrl, secret: SECRET } })).status).toBe(200);
		// Each post's first attempt fails with 503, its second with 429 (retry-after 0); the third is accepted.
		answer = (_key, attempt) => (attempt === 1 ? { status: 503 } : attempt === 2 ? { status: 429, headers: { 'retry-after': '0' } } : { status: 204 });
		deliveries.length = 0;
		const done = await publishAndWait(user, { pseo_id: pseoId });
		// Deliveries retried within a step are not trouble of the publication's own: nothing needs attention.
		expect(done).toMatchObject({ status: 'completed', requested_count: 3, created_count: 3, failed_count: 0, last_error: null, attention: false });
		expect(deliveries).toHaveLength(9);
		expect(deliveries.every((delivery) => delivery.valid)).toBe(true);
		const keys = [...new Set(deliveries.map((delivery) => delivery.key))];
		expect(keys).toHaveLength(3);
		for (const key of keys) expect(deliveries.filter((delivery) => delivery.key === key).map((delivery) => delivery.status)).toEqual([503, 429, 204]);
		const accepted = deliveries.filter((delivery) => delivery.status === 204).map((delivery) => JSON.parse(delivery.body));
		expect(accepted.map((payload) => payload.post.id).sort()).toEqual(posts.map((post) => post.id).sort());
		for (const payload of accepted) {
			const post = posts.find((candidate) => candidate.id === payload.post.id)!;
			expect(payload).toMatchObject({ event: 'post.created', website: { id: pseoId }, post: { route: post.route, title: post.title, markdown: post.body, status: 'draft' } });
			expect(payload.post.html).toContain('<p>');
			expect(payload.post.version).toMatch(/^[0-9a-f]{64}$/);
		}
		// A replayed delivery (the same bytes, later) fails the receiver's age check.
		const replay = deliveries[0]!;
		expect(verify(replay.signature, replay.body, Date.now() + (TOLERANCE_S + 5) * 1000)).toBe(false);
		expect(verify(replay.signature, replay.body.replace('"id"', '"id" '))).toBe(false);

		answer = () => ({ status: 200 });
		deliveries.length = 0;
		expect(await publishAndWait(user, { pseo_id: pseoId })).toMatchObject({ unchanged_count: 3, created_count: 0, updated_count: 0 });
		expect(deliveries).toHaveLength(0);

		const edited = posts[1]!;
		await call(directus, 'PATCH', `/items/pseo_posts/${edited.id}`, { token: user.token, body: { title: 'A better title' } });
		expect(await publishAndWait(user, { pseo_id: pseoId })).toMatchObject({ updated_count: 1, unchanged_count: 2 });
		expect(deliveries).toHaveLength(1);
		expect(JSON.parse(deliveries[0]!.body)).toMatchObject({ event: 'post.updated', post: { id: edited.id, title: 'A better title' } });
		expect(keys).not.toContain(deliveries[0]!.key);
	});

	it('a delivery carries the post\'s facts as they are and its structured data, and its HTML the data block unless the website shows none', async () => {
		const { user, pseoId, posts } = await websiteWithPosts(1);
		const facts = { city: 'Leeds', average_price_gbp: '95.50', population: 812000, emergency: true };
		expect((await call(directus, 'PATCH', `/items/pseo_posts/${posts[0]!.id}`, { token: directus.adminToken, body: { facts } })).status).toBe(200);
		expect((await call(directus, 'PUT', `/pseo-endpoints/pseo/${pseoId}/publishing`, { token: user.token, body: { target: 'webhook', url: receiverUrl, secret: SECRET } })).status).toBe(200);
		answer = () => ({ status: 200 });
		deliveries.length = 0;
		expect(await publishAndWait(user, { pseo_id: pseoId })).toMatchObject({ created_count: 1 });
		const [first] = deliveries.map((delivery) => JSON.parse(delivery.body));
		expect(first.post.facts).toEqual(facts);
		// The post's JSON-LD as stored, and valid.
		const [stored] = await adminItems(directus, 'pseo_posts', `filter[id][_eq]=${posts[0]!.id}&fields=structured_data`);
		expect(first.post.structured_data).toEqual(stored.structured_data);
		expect(await structuredDataProblems(first.post.structured_data, { faq: true })).toEqual([]);
		expect(first.post.html).toContain('<table class="pseo-facts">');
		expect(first.post.html).toContain('<tr><th scope="row">Average price gbp</th><td>95.50</td></tr>');
		expect(first.post.html).toContain('<tr><th scope="row">Emergency</th><td>✓</td></tr>');

		// The owner turns the block off: the next publication sends the page again, without it, its facts still in the payload.
		expect((await call(directus, 'PATCH', `/items/pseo/${pseoId}`, { token: user.token, body: { facts_display: 'none' } })).status).toBe(200);
		expect((await call(directus, 'PATCH', `/items/pseo/${pseoId}`, { token: user.token, body: { facts_display: 'list' } })).status).toBe(400);
		deliveries.length = 0;
		expect(await publishAndWait(user, { pseo_id: pseoId })).toMatchObject({ updated_count: 1 });
		const [second] = deliveries.map((delivery) => JSON.parse(delivery.body));
		expect(second.post.html).not.toContain('<table');
		expect(second.post.facts).toEqual(facts);
	});

	it('a receiver that never answers 2xx fails the post after the attempts, with its reason', async () => {
		const { user, pseoId, posts } = await websiteWithPosts(1);
		expect((await call(directus, 'PUT', `/pseo-endpoints/pseo/${pseoId}/publishing`, { token: user.token, body: { target: 'webhook', url: receiverUrl, secret: SECRET } })).status).toBe(200);
		answer = () => ({ status: 400 });
		deliveries.length = 0;
		const done = await publishAndWait(user, { pseo_id: pseoId });
		expect(done).toMatchObject({ status: 'completed', failed_count: 1, created_count: 0 });
		expect(done.failed_posts).toEqual([{ post_id: posts[0]!.id, route: '/hook/page-1', error: expect.stringMatching(/HTTP 400 after 3 attempts/) }]);
		expect(deliveries).toHaveLength(3);
		answer = () => ({ status: 200 });
	});

	it('the address guard refuses loopback, private ranges and the metadata address for both targets', async () => {
		const user = await createUser(guarded, { balance: 10 });
		const { id } = await createWebsite(guarded, user);
		const put = (body: Record<string, unknown>) => call(guarded, 'PUT', `/pseo-endpoints/pseo/${id}/publishing`, { token: user.token, body });
		for (const url of [receiverUrl, 'http://10.0.0.5/hook', 'http://192.168.0.10/hook', 'http://169.254.169.254/latest', 'http://[::1]/hook', 'http://localhost/hook']) {
			expect(expectEnvelope(await put({ target: 'webhook', url, secret: SECRET }), 400).error, url).toMatch(/refused/);
			expect(expectEnvelope(await put({ target: 'wordpress', url, username: 'admin', application_password: 'abcd efgh ijkl mnop' }), 400).error, url).toMatch(/refused/);
		}
		// The metadata address is refused even where private networks are allowed.
		const open = await createUser(directus, { balance: 10 });
		const site = await createWebsite(directus, open);
		const metadata = await call(directus, 'PUT', `/pseo-endpoints/pseo/${site.id}/publishing`, { token: open.token, body: { target: 'webhook', url: 'http://169.254.169.254/', secret: SECRET } });
		expect(expectEnvelope(metadata, 400).error).toMatch(/metadata/);
	});
});
