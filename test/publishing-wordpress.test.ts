import { structuredDataProblems } from './support/structured-data.ts';
import { execFileSync } from 'node:child_process';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeProvider, type FakeProvider } from './support/fake-provider/server.ts';
import { adminItems, call, createUser, createWebsite, eventually, expectEnvelope, seedPlan, waitForJob, type ApiResponse, type TestUser } from './support/api.ts';
import { copyDatabase, startDirectus, type DatabaseCopy, type DirectusInstance } from './support/directus.ts';
import { legAvailable } from './support/legs.ts';
import { PG } from './support/paths.ts';
import { ensureWordPress, startWordPress, type WordPressPost, type WordPressSite } from './support/wordpress.ts';
import { postsByRoute, syncPrices } from './support/synced-data.ts';

/*
 * Publishing against a real WordPress (Debian's package, MariaDB, PHP's built-in server on loopback): the fields a
 * draft gets, updates without duplicates, skips, schedules, internal links, refusals, the secret never shown, and
 * kill -9 of Directus mid-publication and between WordPress's create and our write, ending with exactly one
 * WordPress post per route.
 */

const LEG = 'postgres' as const;

interface Publication {
	id: number;
	status: string;
	requested_count: number;
	created_count: number;
	updated_count: number;
	unchanged_count: number;
	failed_count: number;
	failed_posts: { post_id: number; route: string; error: string }[];
	notices: string[];
}

describe.skipIf(!legAvailable(LEG))('publishing to WordPress', () => {
	let fake: FakeProvider;
	let wordpress: WordPressSite;
	let database: DatabaseCopy;
	let directus: DirectusInstance;
	const faultFile = path.join(os.tmpdir(), `pseo-fault-${process.pid}-${randomBytes(3).toString('hex')}`);
	/** Every response body and the instance log, scanned for the plain secret at the end. */
	const seen: string[] = [];

	const api = async (method: string, url: string, options: { token?: string; body?: unknown } = {}): Promise<ApiResponse> => {
		const res = await call(directus, method, url, options);
		seen.push(JSON.stringify(res.body));
		return res;
	};

	const target = (overrides: Record<string, unknown> = {}) => ({
		target: 'wordpress',
		url: wordpress.url,
		username: wordpress.username,
		application_password: wordpress.applicationPassword,
		...overrides,
	});

	/** A user with a website whose plan has `count` pages in clusters, all generated as posts. */
	async function websiteWithPosts(count: number, prefix: string): Promise<{ user: TestUser; pseoId: number; posts: Record<string, any>[] }> {
		const user = await createUser(directus, { balance: 1000 });
		const { id: pseoId } = await createWebsite(directus, user);
		// One page more than is generated, so that a generation can still be started while a publication runs.
		const pages = Array.from({ length: count + 1 }, (_, i) => ({ route: `/${prefix}/city-${i + 1}`, title: `${prefix} in city ${i + 1}`, priority: count - i, cluster: i % 2 === 0 ? 'Even cities' : 'Odd & rare cities' }));
		await seedPlan(directus, user, pseoId, pages);
		const res = await api('POST', '/pseo-endpoints/trigger/bulk-generation', { token: user.token, body: { pseo_id: pseoId, post_count: count } });
		expect(res.status).toBe(202);
		const job = await waitForJob(directus, user, res.body.generation_id);
		expect(job).toMatchObject({ status: 'completed', created_count: count });
		const posts = await adminItems(directus, 'pseo_posts', `filter[pseo_id][_eq]=${pseoId}&sort=id`);
		expect(posts).toHaveLength(count);
		return { user, pseoId, posts };
	}

	async function publish(user: TestUser, body: Record<string, unknown>): Promise<number> {
		const res = await api('POST', '/pseo-endpoints/publish', { token: user.token, body });
		expect(res.status, JSON.stringify(res.body)).toBe(202);
		expect(res.body).toMatchObject({ success: true, status: 'pending', publication_id: expect.any(Number) });
		return res.body.publication_id;
	}

	async function waitForPublication(user: TestUser, id: number, timeoutMs = 90_000): Promise<Publication> {
		return eventually(
			async () => {
				const res = await api('GET', `/pseo-endpoints/publications/${id}`, { token: user.token });
				if (res.status !== 200) return null;
				return res.body.data.status === 'completed' || res.body.data.status === 'failed' ? (res.body.data as Publication) : null;
			},
			timeoutMs,
			`publication ${id}`,
		);
	}

	/** The WordPress posts of one website's routes, by the marker each carries. */
	async function remotePostsOf(pseoId: number): Promise<WordPressPost[]> {
		return (await wordpress.listPosts()).filter((post) => new RegExp(`pseo_ref_${pseoId}_\\d+`).test(post.content));
	}

	beforeAll(async () => {
		await ensureWordPress();
		writeFileSync(faultFile, '');
		[fake, wordpress, database] = await Promise.all([startFakeProvider(), startWordPress({ name: 'publish', seoMeta: true }), copyDatabase(LEG)]);
		directus = await startDirectus({
			leg: LEG,
			database,
			env: {
				OPENAI_BASE_URL: fake.url,
				PSEO_ALLOW_PRIVATE_NETWORKS: 'true',
				PSEO_PUBLISH_BACKOFF_MS: '50',
				PSEO_QUALITY_MIN_WORDS: '0',
				PSEO_TEST_FAULT_FILE: faultFile,
			},
		});
	}, 180_000);

	afterAll(async () => {
		await directus?.dispose();
		await Promise.all([fake?.close(), wordpress?.stop()]);
		rmSync(faultFile, { force: true });
	});

	it('a wrong Application Password, or a user who may not create posts, is a clear 400', async () => {
		const user = await createUser(directus, { balance: 10 });
		const { id } = await createWebsite(directus, user);
		const wrong = await api('PUT', `/pseo-endpoints/pseo/${id}/publishing`, { token: user.token, body: target({ application_password: 'abcd efgh ijkl mnop qrst uvwx' }) });
		const envelope = expectEnvelope(wrong, 400);
		expect(envelope.error).toMatch(/WordPress refused the target/);
		expect(envelope.error).toMatch(/rest_not_logged_in|incorrect_password|invalid/i);
		const subscriber = await wordpress.createUserWithAppPassword(`reader${randomBytes(2).toString('hex')}`, 'subscriber');
		const reader = await api('PUT', `/pseo-endpoints/pseo/${id}/publishing`, {
			token: user.token,
			body: target({ username: subscriber.username, application_password: subscriber.applicationPassword }),
		});
		expect(expectEnvelope(reader, 400).error).toMatch(/may not create posts/);
		expect((await api('GET', `/pseo-endpoints/pseo/${id}/publishing`, { token: user.token })).status).toBe(404);
	});

	it('a target is saved checked, shown without its secret, owned, and removable', async () => {
		const user = await createUser(directus, { balance: 10 });
		const other = await createUser(directus, { balance: 10 });
		const { id } = await createWebsite(directus, user);
		const saved = await api('PUT', `/pseo-endpoints/pseo/${id}/publishing`, { token: user.token, body: target() });
		expect(saved.status, JSON.stringify(saved.body)).toBe(200);
		expect(saved.body.data).toEqual({
			pseo_id: id,
			target: 'wordpress',
			url: `${wordpress.url}/`,
			username: wordpress.username,
			default_status: 'draft',
			has_credentials: true,
			date_created: expect.stringMatching(/Z$/),
			date_updated: expect.stringMatching(/Z$/),
		});
		const read = await api('GET', `/pseo-endpoints/pseo/${id}/publishing`, { token: user.token });
		expect(read.body.data).toEqual(saved.body.data);
		// The secret is write-only: a save without it keeps the stored one (and checks it again).
		const kept = await api('PUT', `/pseo-endpoints/pseo/${id}/publishing`, { token: user.token, body: { target: 'wordpress', url: wordpress.url, username: wordpress.username, default_status: 'pending' } });
		expect(kept.status, JSON.stringify(kept.body)).toBe(200);
		expect(kept.body.data.default_status).toBe('pending');
		expect((await api('GET', `/pseo-endpoints/pseo/${id}/publishing`, { token: other.token })).status).toBe(403);
		expect((await api('PUT', `/pseo-endpoints/pseo/${id}/publishing`, { token: other.token, body: target() })).status).toBe(403);
		expect((await api('DELETE', `/pseo-endpoints/pseo/${id}/publishing`, { token: other.token })).status).toBe(403);
		expectEnvelope(await api('PUT', `/pseo-endpoints/pseo/${id}/publishing`, { token: user.token, body: target({ password: 'x' }) }), 400);
		expectEnvelope(await api('PUT', `/pseo-endpoints/pseo/${id}/publishing`, { token: user.token, body: target({ url: 'ftp://example.org' }) }), 400);
		expectEnvelope(await api('PUT', `/pseo-endpoints/pseo/${id}/publishing`, { token: user.token, body: target({ default_status: 'trash' }) }), 400);
		const removed = await api('DELETE', `/pseo-endpoints/pseo/${id}/publishing`, { token: user.token });
		expect(removed.status).toBe(200);
		expect((await api('GET', `/pseo-endpoints/pseo/${id}/publishing`, { token: user.token })).status).toBe(404);
		expectEnvelope(await api('POST', '/pseo-endpoints/publish', { token: user.token, body: { pseo_id: id } }), 409);
	});

	it('publishes drafts with the right fields, links that resolve, and re-publishes by updating or skipping, never duplicating', async () => {
		const { user, pseoId, posts } = await websiteWithPosts(6, 'plumbing');
		expect((await api('PUT', `/pseo-endpoints/pseo/${pseoId}/publishing`, { token: user.token, body: target() })).status).toBe(200);

		const first = await waitForPublication(user, await publish(user, { pseo_id: pseoId }));
		expect(first).toMatchObject({ status: 'completed', requested_count: 6, created_count: 6, updated_count: 0, unchanged_count: 0, failed_count: 0, failed_posts: [] });
		const remote = await remotePostsOf(pseoId);
		expect(remote).toHaveLength(6);
		const categories = (await wordpress.request('GET', '/wp/v2/categories', undefined, { per_page: '100' })).body as { id: number; name: string }[];
		const categoryName = new Map(categories.map((category) => [category.id, category.name.replace(/&amp;/g, '&')]));
		const stored = await adminItems(directus, 'pseo_posts', `filter[pseo_id][_eq]=${pseoId}&sort=id`);
		for (const post of stored) {
			const city = Number(/city-(\d+)$/.exec(post.route)![1]);
			const wp = remote.find((candidate) => String(candidate.id) === post.remote_id);
			expect(wp, `post ${post.route}`).toBeDefined();
			expect(wp).toMatchObject({ status: 'draft', slug: post.route.slice(1).replace('/', '-'), title: post.title, excerpt: post.meta_description });
			expect(wp!.content).toContain('<h2>Frequently asked questions</h2>');
			expect(wp!.content).not.toMatch(/\]\(\//);
			expect(wp!.categories.map((id) => categoryName.get(id))).toEqual([city % 2 === 1 ? 'Even cities' : 'Odd & rare cities']);
			// The site exposes Yoast's and Rank Math's fields over REST: the SEO title and description go there.
			expect(wp!.meta).toMatchObject({
				_yoast_wpseo_title: post.meta_title,
				_yoast_wpseo_metadesc: post.meta_description,
				rank_math_title: post.meta_title,
				rank_math_description: post.meta_description,
			});
			expect(post.remote_url).toBe(wp!.link);
			expect(post.published_hash).toMatch(/^[0-9a-f]{64}$/);
			expect(post.date_published).toMatch(/Z$|\d$/);
		}
		// Every internal link points at a post WordPress has: no link to a page the site does not have.
		const links = new Set(remote.map((post) => post.link));
		let internal = 0;
		for (const wp of remote) {
			for (const [, href] of wp.content.matchAll(/href="([^"]+)"/g)) {
				if (!href!.startsWith(wordpress.url) && !href!.includes('/plumbing/')) continue;
				internal++;
				expect(links.has(href!.replace(/&amp;/g, '&')), `${wp.slug} links to ${href}`).toBe(true);
			}
		}
		expect(internal).toBeGreaterThanOrEqual(6);
		expect(posts.length).toBe(6);

		// Unchanged: nothing is sent again.
		const again = await waitForPublication(user, await publish(user, { pseo_id: pseoId }));
		expect(again).toMatchObject({ status: 'completed', requested_count: 6, created_count: 0, updated_count: 0, unchanged_count: 6 });

		// An edited post is updated in place; the others are skipped.
		const edited = stored[2]!;
		const patch = await api('PATCH', `/items/pseo_posts/${edited.id}`, { token: user.token, body: { body: `${edited.body}\n\nAn added closing paragraph.` } });
		expect(patch.status, JSON.stringify(patch.body)).toBe(200);
		const third = await waitForPublication(user, await publish(user, { pseo_id: pseoId }));
		expect(third).toMatchObject({ status: 'completed', created_count: 0, updated_count: 1, unchanged_count: 5 });
		const after = await remotePostsOf(pseoId);
		expect(after).toHaveLength(6);
		expect(after.find((post) => String(post.id) === edited.remote_id)!.content).toContain('An added closing paragraph.');
	});

	it('a post carries its facts table and its JSON-LD where the user may publish raw HTML; for one who may not, the publication says the JSON-LD was left out', async () => {
		const facts = { city: 'Leeds', population: 812000 };
		const { user, pseoId, posts } = await websiteWithPosts(1, 'jsonld');
		expect((await api('PATCH', `/items/pseo_posts/${posts[0]!.id}`, { token: directus.adminToken, body: { facts } })).status).toBe(200);
		expect((await api('PUT', `/pseo-endpoints/pseo/${pseoId}/publishing`, { token: user.token, body: target() })).status).toBe(200);
		const done = await waitForPublication(user, await publish(user, { pseo_id: pseoId }));
		expect(done).toMatchObject({ status: 'completed', created_count: 1, notices: [] });
		const [wp] = await remotePostsOf(pseoId);
		expect(wp!.content).toContain('<tr><th scope="row">Population</th><td>812000</td></tr>');
		const block = /<script type="application\/ld\+json">([\s\S]*?)<\/script>/.exec(wp!.content);
		expect(block, 'a JSON-LD block in the WordPress post').not.toBeNull();
		const [stored] = await adminItems(directus, 'pseo_posts', `filter[id][_eq]=${posts[0]!.id}&fields=structured_data`);
		expect(JSON.parse(block![1]!)).toEqual(stored.structured_data);
		expect(await structuredDataProblems(JSON.parse(block![1]!), { faq: true })).toEqual([]);

		// An author may create posts but not publish raw HTML, and this site has no SEO field for JSON-LD.
		const author = await wordpress.createUserWithAppPassword(`author${process.pid}`, 'author');
		// Its pages have no cluster: an author may not read categories with context=edit, which the category lookup asks.
		const other = { user: await createUser(directus, { balance: 100 }), pseoId: 0 };
		other.pseoId = (await createWebsite(directus, other.user)).id;
		await seedPlan(directus, other.user, other.pseoId, [{ route: '/jsonld-author/city-1', title: 'Authored city 1', priority: 1 }]);
		const job = await api('POST', '/pseo-endpoints/trigger/on-demand-generation', { token: other.user.token, body: { pseo_id: other.pseoId, post_count: 1 } });
		expect(await waitForJob(directus, other.user, job.body.generation_id)).toMatchObject({ status: 'completed', created_count: 1 });
		const saved = await api('PUT', `/pseo-endpoints/pseo/${other.pseoId}/publishing`, {
			token: other.user.token,
			body: target({ username: author.username, application_password: author.applicationPassword }),
		});
		expect(saved.status, JSON.stringify(saved.body)).toBe(200);
		const left = await waitForPublication(other.user, await publish(other.user, { pseo_id: other.pseoId }));
		expect(left, JSON.stringify(left.failed_posts)).toMatchObject({ status: 'completed', created_count: 1, notices: [expect.stringMatching(/structured data \(JSON-LD\) was left out: this WordPress user may not publish raw HTML/)] });
		const [authored] = await remotePostsOf(other.pseoId);
		expect(authored!.content).not.toContain('application/ld+json');
	});

	it('a refreshed published post is updated in place: the same WordPress post, still published, with the new figure', async () => {
		const user = await createUser(directus, { balance: 100 });
		const { id: pseoId } = await createWebsite(directus, user);
		const rows = [
			{ city: 'Leeds', rank: 2, price_eur: 4870 },
			{ city: 'York', rank: 1, price_eur: 3890 },
		];
		expect((await syncPrices(directus, user, pseoId, rows)).body.data).toMatchObject({ added: 2 });
		const bulk = await api('POST', '/pseo-endpoints/trigger/bulk-generation', { token: user.token, body: { pseo_id: pseoId, post_count: 2 } });
		expect(await waitForJob(directus, user, bulk.body.generation_id)).toMatchObject({ status: 'completed', created_count: 2 });
		expect((await api('PUT', `/pseo-endpoints/pseo/${pseoId}/publishing`, { token: user.token, body: target() })).status).toBe(200);
		expect(await waitForPublication(user, await publish(user, { pseo_id: pseoId, status: 'publish' }))).toMatchObject({ status: 'completed', created_count: 2 });
		const before = await postsByRoute(directus, pseoId);
		const remoteOf = async (route: string) => (await remotePostsOf(pseoId)).find((post) => String(post.id) === before.get(route)!.remote_id);
		expect(await remoteOf('/leeds')).toMatchObject({ status: 'publish', content: expect.stringContaining('4870') });

		// Leeds' price changes; its refresh reaches the site without a click.
		expect((await syncPrices(directus, user, pseoId, [{ ...rows[0]!, price_eur: 5130 }, rows[1]!])).body.data).toMatchObject({ updated: 1 });
		const refresh = await api('POST', '/pseo-endpoints/trigger/refresh-generation', { token: user.token, body: { pseo_id: pseoId } });
		expect(refresh.status).toBe(202);
		expect(await waitForJob(directus, user, refresh.body.generation_id)).toMatchObject({ kind: 'refresh', status: 'completed', created_count: 1 });
		const leeds = await eventually(async () => {
			const post = await remoteOf('/leeds');
			return post?.content.includes('5130') ? post : null;
		}, 90_000, 'the refreshed post on WordPress');
		expect(leeds).toMatchObject({ status: 'publish' });
		expect(leeds.content).not.toContain('4870');
		// In place: no second post, the same remote id on record, and York untouched.
		expect(await remotePostsOf(pseoId)).toHaveLength(2);
		const after = await postsByRoute(directus, pseoId);
		expect(after.get('/leeds')).toMatchObject({ remote_id: before.get('/leeds')!.remote_id, stale: false });
		expect((await remoteOf('/york'))!.content).toContain('3890');
	});

	it('a schedule gives future posts on the planned days', async () => {
		const { user, pseoId, posts } = await websiteWithPosts(3, 'roofing');
		expect((await api('PUT', `/pseo-endpoints/pseo/${pseoId}/publishing`, { token: user.token, body: target() })).status).toBe(200);
		const start = new Date(Date.now() + 3 * 86_400_000);
		start.setUTCHours(9, 30, 0, 0);
		const bad = await api('POST', '/pseo-endpoints/publish', { token: user.token, body: { pseo_id: pseoId, schedule: { start: '2001-01-01T00:00:00Z', per_day: 2 } } });
		expect(expectEnvelope(bad, 400).error).toMatch(/future/);
		const done = await waitForPublication(user, await publish(user, { pseo_id: pseoId, schedule: { start: start.toISOString(), per_day: 2 } }));
		expect(done).toMatchObject({ status: 'completed', created_count: 3 });
		const remote = await remotePostsOf(pseoId);
		const byId = new Map(remote.map((post) => [String(post.id), post]));
		const stored = await adminItems(directus, 'pseo_posts', `filter[pseo_id][_eq]=${pseoId}&sort=id`);
		const day = (offset: number) => new Date(start.getTime() + offset * 86_400_000).toISOString().slice(0, 19);
		expect(stored.map((post) => byId.get(post.remote_id)?.status)).toEqual(['future', 'future', 'future']);
		expect(stored.map((post) => byId.get(post.remote_id)?.date_gmt)).toEqual([day(0), day(0), day(1)]);
		expect(posts).toHaveLength(3);
	});

	it('post_ids and quality: listed posts only; a post of another website is 400; a second active publication is 409', async () => {
		const { user, pseoId, posts } = await websiteWithPosts(2, 'painting');
		const other = await websiteWithPosts(1, 'tiling');
		expect((await api('PUT', `/pseo-endpoints/pseo/${pseoId}/publishing`, { token: user.token, body: target() })).status).toBe(200);
		expectEnvelope(await api('POST', '/pseo-endpoints/publish', { token: user.token, body: { pseo_id: pseoId, post_ids: [other.posts[0]!.id] } }), 400);
		expectEnvelope(await api('POST', '/pseo-endpoints/publish', { token: user.token, body: { pseo_id: pseoId, post_ids: 'all' } }), 400);
		expectEnvelope(await api('POST', '/pseo-endpoints/publish', { token: other.user.token, body: { pseo_id: pseoId } }), 403);
		// A post the quality gate failed is left out unless it is listed by id.
		const failing = await api('PATCH', `/items/pseo_posts/${posts[0]!.id}`, { token: directus.adminToken, body: { quality_status: 'fail' } });
		expect(failing.status).toBe(200);
		const id = await publish(user, { pseo_id: pseoId, post_ids: [posts[0]!.id] });
		const twin = await api('POST', '/pseo-endpoints/publish', { token: user.token, body: { pseo_id: pseoId } });
		// A publication does not block generation of the same website.
		const generation = await api('POST', '/pseo-endpoints/trigger/on-demand-generation', { token: user.token, body: { pseo_id: pseoId, post_count: 1 } });
		expect(generation.status, JSON.stringify(generation.body)).toBe(202);
		expect((await waitForJob(directus, user, generation.body.generation_id)).status).toBe('completed');
		const done = await waitForPublication(user, id);
		expect(done).toMatchObject({ requested_count: 1, created_count: 1 });
		if (twin.status !== 202) expectEnvelope(twin, 409);
		else await waitForPublication(user, twin.body.publication_id);
		const rest = await waitForPublication(user, await publish(user, { pseo_id: pseoId }));
		// posts[1] and the page generated meanwhile; not posts[0], which failed the gate.
		expect(rest).toMatchObject({ status: 'completed', requested_count: 2, failed_count: 0 });
		expect(rest.created_count + rest.unchanged_count).toBe(2);
		const published = await adminItems(directus, 'pseo_posts', `filter[pseo_id][_eq]=${pseoId}&filter[remote_id][_nnull]=true`);
		expect(published).toHaveLength(3);
		expect((await api('GET', `/pseo-endpoints/publications/${id}`, { token: other.user.token })).status).toBe(403);
		expect((await api('GET', '/pseo-endpoints/publications/999999', { token: user.token })).status).toBe(404);
	});

	it('kill -9 between WordPress\'s create and our write ends with exactly one WordPress post per route', async () => {
		const { user, pseoId } = await websiteWithPosts(4, 'heating');
		expect((await api('PUT', `/pseo-endpoints/pseo/${pseoId}/publishing`, { token: user.token, body: target() })).status).toBe(200);
		writeFileSync(faultFile, 'after-remote-create');
		const id = await publish(user, { pseo_id: pseoId });
		await eventually(async () => !directus.running(), 60_000, 'the instance to die at the fault point');
		writeFileSync(faultFile, '');
		expect(directus.output()).toContain('fault point after-remote-create reached');
		await directus.restart();
		const done = await waitForPublication(user, id);
		expect(done).toMatchObject({ status: 'completed', requested_count: 4, created_count: 4, failed_count: 0 });
		const remote = await remotePostsOf(pseoId);
		expect(remote.map((post) => post.slug).sort()).toEqual(['heating-city-1', 'heating-city-2', 'heating-city-3', 'heating-city-4']);
	});

	it('kill -9 in the middle of a publication resumes it, with exactly one WordPress post per route', async () => {
		const { user, pseoId } = await websiteWithPosts(12, 'cleaning');
		expect((await api('PUT', `/pseo-endpoints/pseo/${pseoId}/publishing`, { token: user.token, body: target() })).status).toBe(200);
		const id = await publish(user, { pseo_id: pseoId });
		await eventually(async () => (await remotePostsOf(pseoId)).length >= 3, 60_000, 'a few posts on WordPress');
		await directus.kill();
		await directus.restart();
		const done = await waitForPublication(user, id);
		expect(done).toMatchObject({ status: 'completed', requested_count: 12, created_count: 12, failed_count: 0 });
		const remote = await remotePostsOf(pseoId);
		expect(remote).toHaveLength(12);
		expect(new Set(remote.map((post) => post.slug)).size).toBe(12);
	});

	it('moving to another WordPress site publishes there afresh and never touches the old site\'s posts by id', async () => {
		const { user, pseoId } = await websiteWithPosts(3, 'moving');
		expect((await api('PUT', `/pseo-endpoints/pseo/${pseoId}/publishing`, { token: user.token, body: target() })).status).toBe(200);
		expect(await waitForPublication(user, await publish(user, { pseo_id: pseoId }))).toMatchObject({ created_count: 3 });
		const before = await wordpress.listPosts();
		const other = await startWordPress({ name: 'moved' });
		try {
			const moved = await api('PUT', `/pseo-endpoints/pseo/${pseoId}/publishing`, {
				token: user.token,
				body: { target: 'wordpress', url: other.url, username: other.username, application_password: other.applicationPassword },
			});
			expect(moved.status, JSON.stringify(moved.body)).toBe(200);
			expect(await waitForPublication(user, await publish(user, { pseo_id: pseoId }))).toMatchObject({ created_count: 3, updated_count: 0, unchanged_count: 0 });
			const there = (await other.listPosts()).filter((post) => post.content.includes(`pseo_ref_${pseoId}_`));
			expect(there.map((post) => post.slug).sort()).toEqual(['moving-city-1', 'moving-city-2', 'moving-city-3']);
			// The old site is as it was: no post of it was rewritten through a stale id.
			const after = await wordpress.listPosts();
			expect(after.map((post) => [post.id, post.content])).toEqual(before.map((post) => [post.id, post.content]));
			const stored = await adminItems(directus, 'pseo_posts', `filter[pseo_id][_eq]=${pseoId}`);
			expect(stored.map((post) => post.remote_url.startsWith(other.url)).every(Boolean)).toBe(true);
		} finally {
			await other.stop();
		}
	});

	it('the plain secret appears in no response, log line or database row', async () => {
		expect(seen.length).toBeGreaterThan(20);
		for (const body of seen) expect(body).not.toContain(wordpress.applicationPassword);
		expect(directus.output()).not.toContain(wordpress.applicationPassword);
		const [row] = await adminItems(directus, 'pseo_publishing_targets', 'filter[target][_eq]=wordpress');
		expect(row.secret_ciphertext).toMatch(/^v1:/);
		const dump = execFileSync('pg_dump', ['-h', PG.host, '-p', String(PG.port), '-U', PG.user, '--data-only', database.env['DB_DATABASE']!], {
			encoding: 'utf8',
			maxBuffer: 256 * 1024 * 1024,
			env: { ...process.env, PGPASSWORD: PG.password },
			// pg_dump warns about Directus's circular foreign keys on stderr; the dump is what this test reads.
			stdio: ['ignore', 'pipe', 'pipe'],
		});
		expect(dump).toContain('v1:');
		expect(dump).not.toContain(wordpress.applicationPassword);
		expect(dump).not.toContain(wordpress.applicationPassword.replace(/ /g, ''));
		expect(readFileSync(faultFile, 'utf8')).toBe('');
	});
});
