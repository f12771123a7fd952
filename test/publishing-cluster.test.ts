import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeProvider, type FakeProvider } from './support/fake-provider/server.ts';
import { adminItems, call, createUser, createWebsite, eventually, seedPlan, waitForJob } from './support/api.ts';
import { startCluster, type Cluster } from './support/cluster.ts';
import { copyDatabase } from './support/directus.ts';
import { legAvailable } from './support/legs.ts';
import { ensureWordPress, startWordPress, type WordPressSite } from './support/wordpress.ts';

/*
 * Publications on two instances sharing one PostgreSQL database: each is run by one worker only, and the loss of
 * the instance running one (kill -9) leaves it to the other, which finishes it with exactly one WordPress post per
 * route and every count exact.
 */

describe.skipIf(!legAvailable('postgres'))('publishing on several instances', () => {
	let fake: FakeProvider;
	let wordpress: WordPressSite;
	let cluster: Cluster;

	beforeAll(async () => {
		await ensureWordPress();
		[fake, wordpress] = await Promise.all([startFakeProvider(), startWordPress({ name: 'cluster' })]);
		cluster = await startCluster({
			size: 2,
			database: await copyDatabase('postgres'),
			env: { OPENAI_BASE_URL: fake.url, PSEO_ALLOW_PRIVATE_NETWORKS: 'true', PSEO_QUALITY_MIN_WORDS: '0', PSEO_PUBLISH_BACKOFF_MS: '50' },
		});
	}, 180_000);

	afterAll(async () => {
		await cluster?.dispose();
		await Promise.all([fake?.close(), wordpress?.stop()]);
	});

	it('a publication runs once, and the instance that runs it can die: the other finishes it, one WordPress post per route', async () => {
		const [first, second] = cluster.instances as [(typeof cluster.instances)[0], (typeof cluster.instances)[0]];
		const user = await createUser(first, { balance: 1000 });
		const { id: pseoId } = await createWebsite(first, user);
		const count = 20;
		await seedPlan(first, user, pseoId, Array.from({ length: count }, (_, i) => ({ route: `/cluster/page-${i + 1}`, title: `Cluster page ${i + 1}`, priority: count - i })));
		const job = await call(first, 'POST', '/pseo-endpoints/trigger/bulk-generation', { token: user.token, body: { pseo_id: pseoId, post_count: count } });
		expect((await waitForJob(first, user, job.body.generation_id)).created_count).toBe(count);
		const target = { target: 'wordpress', url: wordpress.url, username: wordpress.username, application_password: wordpress.applicationPassword };
		expect((await call(second, 'PUT', `/pseo-endpoints/pseo/${pseoId}/publishing`, { token: user.token, body: target })).status).toBe(200);

		// Both instances are asked at once; one publication is accepted, the other is a 409.
		const answers = await Promise.all([first, second].map((instance) => call(instance, 'POST', '/pseo-endpoints/publish', { token: user.token, body: { pseo_id: pseoId } })));
		expect(answers.map((answer) => answer.status).sort()).toEqual([202, 409]);
		const id = answers.find((answer) => answer.status === 202)!.body.publication_id as number;

		const ours = async () => (await wordpress.listPosts()).filter((post) => post.content.includes(`pseo_ref_${pseoId}_`));
		await eventually(async () => (await ours()).length >= 3, 60_000, 'a few posts on WordPress');
		const [row] = await adminItems(first, 'pseo_publications', `filter[id][_eq]=${id}`);
		const pid = (worker: string | null) => worker?.split(':')[1];
		const holder = cluster.instances.find((instance) => pid(cluster.workerOf(instance)) === pid(row.lease_owner));
		expect(holder, `lease owner ${row.lease_owner}`).toBeDefined();
		await holder!.kill();
		const survivor = holder === first ? second : first;

		const done = await eventually(
			async () => {
				const read = await call(survivor, 'GET', `/pseo-endpoints/publications/${id}`, { token: user.token });
				return read.body.data?.status === 'completed' ? read.body.data : null;
			},
			90_000,
			'the publication to complete on the surviving instance',
		);
		expect(done).toMatchObject({ requested_count: count, created_count: count, updated_count: 0, failed_count: 0 });
		const remote = await ours();
		expect(remote).toHaveLength(count);
		expect(new Set(remote.map((post) => post.slug)).size).toBe(count);
		const [finished] = await adminItems(survivor, 'pseo_publications', `filter[id][_eq]=${id}`);
		expect(pid(finished.lease_owner ?? null)).toBeUndefined();
		expect(finished.attempts).toBeGreaterThanOrEqual(2);
	});
});
