import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startFakeProvider, type FakeProvider } from './support/fake-provider/server.ts';
import { call, createUser, eventually, waitForJob } from './support/api.ts';
import { copyDatabase, type DirectusInstance } from './support/directus.ts';
import { startCluster, type Cluster } from './support/cluster.ts';
import { clusterMissing } from './support/cluster-prerequisites.ts';
import { lockUserRow, lockWaiters, releaseHeldLocks } from './support/pg-locks.ts';
import { waitForGiveUp, batchesOf, expectLedgerBalances, expectPostsOnce, jobRow, plannedSite, postedRoutes } from './support/job-checks.ts';

/*
 * Operating contract section 5, the fence: a worker that stalls (SIGSTOP: a long GC pause, a frozen VM, a
 * partition) past its lease loses the job to another instance, and when it wakes up, whatever it was about to
 * write must not land. A kill -9 cannot prove that, because a dead worker writes nothing; only a worker that
 * comes back can. Each test parks the lease holder's write on a row lock the test holds (so the write is provably
 * in flight), freezes the holder, waits for the other instance to take the job over and to be held at the provider
 * in turn, lets the lock go (the frozen worker now holds it, its next statement the fenced one), resumes it, and
 * checks that nothing it wrote landed before the survivor is allowed to finish.
 */

const ON_DEMAND = '/pseo-endpoints/trigger/on-demand-generation';
const BULK = '/pseo-endpoints/trigger/bulk-generation';
const LEASE_MS = 3000;
const PAGE_RATE = 10;
const BATCH_RATE = 5;
/** More than one ingest chunk (250 results), so that a frozen ingest has written its first chunk and not the rest. */
const BULK_PAGES = 300;
const HELD_AFTER_LINES = 260;

const missing = clusterMissing('stall suite');

describe.skipIf(missing.length > 0)('a stalled lease holder on PostgreSQL with two instances', () => {
	let fake: FakeProvider;
	let cluster: Cluster;
	let reader: DirectusInstance;
	let databaseName: string;

	beforeAll(async () => {
		fake = await startFakeProvider();
		const database = await copyDatabase('postgres');
		databaseName = database.env['DB_DATABASE']!;
		cluster = await startCluster({
			size: 2,
			database,
			env: {
				OPENAI_BASE_URL: fake.url,
				PSEO_PROVIDER_BACKOFF_MS: '50',
				PSEO_LEASE_MS: String(LEASE_MS),
				PSEO_SWEEP_INTERVAL_MS: '200',
				PSEO_BATCH_POLL_INTERVAL_MS: '200',
				PSEO_TOKEN_PER_PAGE: String(PAGE_RATE),
				PSEO_TOKEN_PER_BATCH_PAGE: String(BATCH_RATE),
			},
		});
		reader = cluster.instances[0]!;
	});
	afterEach(async () => {
		for (const instance of cluster.instances) instance.resume();
		await releaseHeldLocks();
		fake.reset();
	});
	afterAll(async () => {
		await cluster?.dispose();
		await fake?.close();
	});

	/** The instance that holds the job's lease now, and the other one. */
	async function holderOf(id: number): Promise<{ frozen: DirectusInstance; survivor: DirectusInstance; survivorWorker: string }> {
		const owner = await eventually(async () => (await jobRow(reader, id)).lease_owner as string | null, 20_000, 'a lease holder');
		const frozen = cluster.instanceOf(owner)!;
		const survivor = cluster.instances.find((instance) => instance !== frozen)!;
		return { frozen, survivor, survivorWorker: cluster.workerOf(survivor)! };
	}

	/**
	 * Waits until the frozen worker, resumed, has given the job up (it logs that), or until its late write shows in
	 * the job row (`landed`), so that a broken fence fails on the state it left rather than on a timeout.
	 */
	async function waitForHandOver(frozen: DirectusInstance, before: number, jobId: number, landed: () => Promise<boolean>): Promise<void> {
		await eventually(
			async () => {
				const since = frozen.output().slice(before);
				return (since.includes('pseo job handed over to another worker') && since.includes(`"jobId":${jobId}`)) || (await landed());
			},
			20_000,
			'the resumed worker to give the job up',
		);
	}

	it('5 a chat job: the resumed worker\'s late page failure never lands, and the survivor completes the page once', async () => {
		const user = await createUser(reader, { balance: 1000 });
		const site = await plannedSite(reader, user, 2);
		const route = site.routes[0]!;
		fake.configure({ holdChat: true });
		const res = await call(reader, 'POST', ON_DEMAND, { token: user.token, body: { pseo_id: site.pseoId, post_count: 1 } });
		expect(res.status).toBe(202);
		const id = res.body.generation_id as number;
		const { frozen, survivor, survivorWorker } = await holderOf(id);
		// The frozen instance answers nothing: every read from here goes through the survivor.
		const via = survivor;
		await eventually(async () => fake.heldChat() === 1, 20_000, 'the holder\'s call at the provider');

		// The holder's page fails at the provider, and its write of that failure (and its refund) is parked on the
		// payer's row while the holder freezes.
		const lock = await lockUserRow(databaseName, user.id);
		fake.configure({ chatErrorsForTask: { page: 400 } });
		expect(fake.releaseChat(1)).toBe(1);
		await eventually(async () => (await lockWaiters(databaseName)) === 1, 20_000, 'the holder\'s write waiting on the lock');
		fake.configure({ chatErrorsForTask: {} });
		frozen.pause();
		await eventually(async () => (await jobRow(via, id)).lease_owner === survivorWorker, LEASE_MS + 15_000, 'the survivor to take the job over');
		await eventually(async () => fake.heldChat() === 1, 20_000, 'the survivor\'s call at the provider');
		// The frozen worker gets the lock while it cannot run; on waking, its next statement is the fenced one.
		await lock.release();
		const before = frozen.output().length;
		frozen.resume();
		await waitForHandOver(frozen, before, id, async () => Number((await jobRow(via, id)).failed_count) > 0);

		// Nothing of the frozen worker's landed: no failure, no refund, and the survivor still holds the job.
		expect(await jobRow(via, id)).toMatchObject({ status: 'running', lease_owner: survivorWorker, created_count: 0, failed_count: 0 });
		expect((await expectLedgerBalances(via, user)).filter((row) => row.reason === 'refund')).toEqual([]);
		expect(frozen.output().slice(before)).toContain('a late write from this worker was refused');

		fake.configure({ holdChat: false });
		expect(fake.releaseChat()).toBe(1);
		const job = await waitForJob(via, user, id, 30_000);
		expect(job).toMatchObject({ status: 'completed', created_count: 1, failed_count: 0, failed_routes: [] });
		await expectPostsOnce(via, site.pseoId, [route]);
		const ledger = await expectLedgerBalances(via, user);
		expect(ledger.map((row) => [row.reason, Number(row.amount)])).toEqual([['grant', 1000], ['charge', -PAGE_RATE]]);
		expect(fake.countChat(route)).toBe(2);
		// Both instances are alive and well after it.
		for (const instance of [frozen, survivor]) expect((await fetch(`${instance.url}/server/ping`)).ok).toBe(true);
	});

	it('5 a batch ingest: the resumed worker\'s second chunk never lands, and the survivor ingests every page once', async () => {
		const user = await createUser(reader, { balance: 10_000 });
		const site = await plannedSite(reader, user, BULK_PAGES);
		// Every download of the results stops after 260 lines: the first 250 are a chunk the reader stores, the
		// next 10 wait in its buffer for the rest of the file.
		fake.configure({ holdFileAfterLines: HELD_AFTER_LINES });
		const res = await call(reader, 'POST', BULK, { token: user.token, body: { pseo_id: site.pseoId, post_count: BULK_PAGES } });
		expect(res.status).toBe(202);
		const id = res.body.generation_id as number;

		await eventually(async () => fake.heldFiles() === 1, 60_000, 'the holder\'s download held mid-file');
		await eventually(async () => Number((await jobRow(reader, id)).created_count) === 250, 20_000, 'the first chunk stored');
		const { frozen, survivor, survivorWorker } = await holderOf(id);
		const via = survivor;

		// The holder gets the rest of its file; its write of the last 50 pages is parked on the payer's row while
		// it freezes.
		const lock = await lockUserRow(databaseName, user.id);
		expect(fake.releaseFiles(1)).toBe(1);
		await eventually(async () => (await lockWaiters(databaseName)) === 1, 20_000, 'the holder\'s write waiting on the lock');
		frozen.pause();
		await eventually(async () => (await jobRow(via, id)).lease_owner === survivorWorker, LEASE_MS + 15_000, 'the survivor to take the job over');
		// The survivor's download stops mid-file too; its first chunk (all 250 already stored) waits on the lock.
		await eventually(async () => fake.heldFiles() === 1, 20_000, 'the survivor\'s download held mid-file');
		await lock.release();
		const before = frozen.output().length;
		frozen.resume();
		await waitForHandOver(frozen, before, id, async () => Number((await jobRow(via, id)).created_count) > 250);
		expect(await jobRow(via, id)).toMatchObject({ status: 'running', lease_owner: survivorWorker, created_count: 250, failed_count: 0 });
		expect(await postedRoutes(via, site.pseoId)).toHaveLength(250);
		expect(frozen.output().slice(before)).toContain('a late write from this worker was refused');

		fake.configure({ holdFileAfterLines: null });
		expect(fake.releaseFiles()).toBe(1);
		const job = await waitForJob(via, user, id, 60_000);
		expect(job).toMatchObject({ status: 'completed', requested_count: BULK_PAGES, created_count: BULK_PAGES, failed_count: 0, failed_routes: [] });
		await expectPostsOnce(via, site.pseoId, site.routes);
		expect(batchesOf(fake, id)).toBe(1);
		const ledger = await expectLedgerBalances(via, user);
		expect(ledger.map((row) => [row.reason, Number(row.amount)])).toEqual([['grant', 10_000], ['charge', -BULK_PAGES * BATCH_RATE]]);
	});

	it('a cancel sent to one instance stops the job another instance runs, and that worker\'s late page never lands', async () => {
		const user = await createUser(reader, { balance: 1000 });
		const site = await plannedSite(reader, user, 2);
		fake.configure({ holdChat: true });
		const res = await call(reader, 'POST', ON_DEMAND, { token: user.token, body: { pseo_id: site.pseoId, post_count: 1 } });
		const id = res.body.generation_id as number;
		const { frozen: holder, survivor: other } = await holderOf(id);
		await eventually(async () => fake.heldChat() === 1, 20_000, 'the holder\'s call at the provider');

		const cancelled = await call(other, 'POST', `/pseo-endpoints/generations/${id}/cancel`, { token: user.token });
		expect(cancelled.status).toBe(200);
		expect(cancelled.body.data).toMatchObject({ status: 'failed', created_count: 0, failed_count: 1, failed_routes: [{ route: site.routes[0], error: 'cancelled' }] });
		fake.configure({ holdChat: false });
		fake.releaseChat();
		await waitForGiveUp(holder, id);
		expect(await postedRoutes(other, site.pseoId)).toEqual([]);
		expect(await jobRow(other, id)).toMatchObject({ status: 'failed', created_count: 0, failed_count: 1 });
		const ledger = await expectLedgerBalances(other, user);
		expect(ledger.map((row) => [row.reason, Number(row.amount)])).toEqual([['grant', 1000], ['charge', -PAGE_RATE], ['refund', PAGE_RATE]]);
		expect(fake.countChat(site.routes[0])).toBe(1);
	});
});
