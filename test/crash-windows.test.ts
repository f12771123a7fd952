import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startFakeProvider, type FakeProvider } from './support/fake-provider/server.ts';
import { adminItems, balanceOf, call, createUser, eventually, waitForJob } from './support/api.ts';
import { copyDatabase, type DirectusInstance } from './support/directus.ts';
import { startCluster, type Cluster } from './support/cluster.ts';
import { clusterMissing } from './support/cluster-prerequisites.ts';
import { baseEnv, freePort, type DatabaseCopy } from './support/instance.ts';
import { query } from './support/invariants.ts';
import { batchesOf, expectLedgerBalances, expectPostsOnce, jobRow, plannedSite } from './support/job-checks.ts';
import { NODE22, PG, ROOT } from './support/paths.ts';
import { dropDatabase, pgAdmin } from './support/postgres.ts';

/*
 * Operating contract section 5, window by window: the process dies between two writes that cannot share a
 * transaction, and every accepted job still finishes once, with every token accounted for. The extension kills
 * itself at a named point when the harness arms it (PSEO_TEST_FAULT_FILE, src/shared/fault-injection.ts), so each
 * test lands in its window every time instead of by luck. The other windows need no hook: a SIGTERM while a page
 * is out, a kill -9 of the instance that created a batch, two replicas starting at once.
 */

const ON_DEMAND = '/pseo-endpoints/trigger/on-demand-generation';
const BULK = '/pseo-endpoints/trigger/bulk-generation';
const LEASE_MS = 3000;
const PAGE_RATE = 10;
const BATCH_RATE = 5;
const PART_LINES = 260;

const ENV = {
	PSEO_PROVIDER_BACKOFF_MS: '50',
	PSEO_LEASE_MS: String(LEASE_MS),
	PSEO_SWEEP_INTERVAL_MS: '200',
	PSEO_BATCH_POLL_INTERVAL_MS: '200',
	PSEO_TOKEN_PER_PAGE: String(PAGE_RATE),
	PSEO_TOKEN_PER_BATCH_PAGE: String(BATCH_RATE),
	// Bulk jobs of more than 260 pages run in parts, so the windows between and inside parts can be hit.
	PSEO_BATCH_MAX_REQUESTS: String(PART_LINES),
};

const missing = clusterMissing('crash-window suite');

describe.skipIf(missing.length > 0)('crash windows on PostgreSQL with two instances', () => {
	let fake: FakeProvider;
	let cluster: Cluster;
	let a: DirectusInstance;
	let b: DirectusInstance;
	let databaseName: string;
	const faultFile = path.join(os.tmpdir(), `pseo-fault-${process.pid}-${randomBytes(3).toString('hex')}`);

	beforeAll(async () => {
		fake = await startFakeProvider();
		writeFileSync(faultFile, '');
		const database = await copyDatabase('postgres');
		databaseName = database.env['DB_DATABASE']!;
		cluster = await startCluster({ size: 2, database, env: { OPENAI_BASE_URL: fake.url, PSEO_TEST_FAULT_FILE: faultFile, ...ENV } });
		[a, b] = cluster.instances as [DirectusInstance, DirectusInstance];
	});
	afterEach(async () => {
		writeFileSync(faultFile, '');
		fake.reset();
		// Every test starts with both instances up.
		for (const instance of cluster.instances) if (!instance.running()) await instance.restart();
	});
	afterAll(async () => {
		await cluster?.dispose();
		await fake?.close();
		rmSync(faultFile, { force: true });
	});

	/** The job's row straight from the database: readable whichever instance is down. */
	async function storedJob(id: number): Promise<{ created_count: number; batch_id: string | null; status: string }> {
		const [row] = await query<{ created_count: number; batch_id: string | null; status: string }>(
			databaseName,
			'SELECT created_count, batch_id, status FROM pseo_generations WHERE id = $1',
			[id],
		);
		return row!;
	}

	/**
	 * Arms `point` in both instances and waits for the one that reaches it first to die there; disarms it at once,
	 * so the other, which takes the work over, runs through the same point. Returns the survivor.
	 */
	async function crashAt(point: string, work: () => Promise<unknown>): Promise<DirectusInstance> {
		writeFileSync(faultFile, point);
		await work();
		const dead = await eventually(async () => cluster.instances.find((instance) => !instance.running()), 60_000, `an instance to die at ${point}`);
		writeFileSync(faultFile, '');
		expect(dead.output()).toContain(`fault point ${point} reached`);
		return dead === a ? b : a;
	}

	it('5 a crash between the provider\'s batch create and storing its id: the next worker adopts that batch, never a second', async () => {
		const user = await createUser(a, { balance: 1000 });
		const site = await plannedSite(a, user, 5);
		let id = 0;
		const survivor = await crashAt('after-batch-create', async () => {
			const res = await call(a, 'POST', BULK, { token: user.token, body: { pseo_id: site.pseoId, post_count: 5 } });
			expect(res.status).toBe(202);
			id = res.body.generation_id as number;
		});
		// In the window: the provider has the batch, the job does not know it.
		expect(batchesOf(fake, id)).toBe(1);
		expect(await storedJob(id)).toMatchObject({ status: 'running', batch_id: null });

		const job = await waitForJob(survivor, user, id, 60_000);
		expect(job).toMatchObject({ status: 'completed', created_count: 5, failed_count: 0, failed_routes: [] });
		expect(batchesOf(fake, id)).toBe(1);
		expect(survivor.output()).toMatch(new RegExp(`"jobId":${id},"part":0,"batchId":"[^"]+".*adopted after a lost create`));
		await expectPostsOnce(survivor, site.pseoId, site.routes);
		const ledger = await expectLedgerBalances(survivor, user);
		expect(ledger.map((row) => [row.reason, Number(row.amount)])).toEqual([['grant', 1000], ['charge', -5 * BATCH_RATE]]);
	});

	it('5 a crash in the middle of a batch ingest of a job in two parts: the next worker stores the rest, each page once', async () => {
		const user = await createUser(a, { balance: 10_000 });
		// More than one ingest chunk (250) in the first part (260 lines), so the crash falls after the first chunk and
		// before the rest; the second part (40 lines) is still to be ingested.
		const site = await plannedSite(a, user, 300);
		let id = 0;
		const survivor = await crashAt('mid-batch-ingest', async () => {
			const res = await call(a, 'POST', BULK, { token: user.token, body: { pseo_id: site.pseoId, post_count: 300 } });
			expect(res.status).toBe(202);
			id = res.body.generation_id as number;
		});
		// In the window: one chunk stored, the rest not.
		expect(await storedJob(id)).toMatchObject({ status: 'running', created_count: 250 });

		const job = await waitForJob(survivor, user, id, 60_000);
		expect(job).toMatchObject({ status: 'completed', requested_count: 300, created_count: 300, failed_count: 0, failed_routes: [] });
		expect(batchesOf(fake, id)).toBe(2);
		await expectPostsOnce(survivor, site.pseoId, site.routes);
		const ledger = await expectLedgerBalances(survivor, user);
		expect(ledger.map((row) => [row.reason, Number(row.amount)])).toEqual([['grant', 10_000], ['charge', -300 * BATCH_RATE]]);
	});

	it('5 a crash between two parts of a bulk job: the next worker submits the second part once and the job completes', async () => {
		const user = await createUser(a, { balance: 10_000 });
		const site = await plannedSite(a, user, 300);
		let id = 0;
		const survivor = await crashAt('between-parts', async () => {
			const res = await call(a, 'POST', BULK, { token: user.token, body: { pseo_id: site.pseoId, post_count: 300 } });
			expect(res.status).toBe(202);
			id = res.body.generation_id as number;
		});
		// In the window: the first part is stored, the second not submitted.
		const stored = await query<{ part: number; route_end: number }>(databaseName, 'SELECT part, route_end FROM pseo_generation_parts WHERE generation_id = $1', [id]);
		expect(stored.map((row) => [Number(row.part), Number(row.route_end)])).toEqual([[0, PART_LINES]]);
		expect(batchesOf(fake, id)).toBe(1);

		const job = await waitForJob(survivor, user, id, 60_000);
		expect(job).toMatchObject({ status: 'completed', requested_count: 300, created_count: 300, failed_count: 0, failed_routes: [] });
		expect(batchesOf(fake, id)).toBe(2);
		for (const route of site.routes) expect(fake.countBatchedRoute(route)).toBe(1);
		await expectPostsOnce(survivor, site.pseoId, site.routes);
		const ledger = await expectLedgerBalances(survivor, user);
		expect(ledger.map((row) => [row.reason, Number(row.amount)])).toEqual([['grant', 10_000], ['charge', -300 * BATCH_RATE]]);
	});

	it('5 a new part\'s create lost, then an expiry: the lost batch is adopted as that part, the expired one resubmitted once', async () => {
		const user = await createUser(a, { balance: 10_000 });
		const site = await plannedSite(a, user, 300);
		// Batches wait for releaseBatches(), then end expired with half of their lines answered.
		fake.configure({ holdBatches: true, batchEndState: 'expired', batchPartialFraction: 0.5 });
		let id = 0;
		const survivor = await crashAt('between-parts', async () => {
			const res = await call(a, 'POST', BULK, { token: user.token, body: { pseo_id: site.pseoId, post_count: 300 } });
			expect(res.status).toBe(202);
			id = res.body.generation_id as number;
		});
		// The survivor resumes the job once its lease lapses, creates the second part's batch (routes 260 to 300) and
		// dies before storing it. Armed at once: the survivor must not get there first.
		writeFileSync(faultFile, 'after-batch-create');
		await eventually(async () => !survivor.running(), 60_000, 'the survivor to die at after-batch-create');
		writeFileSync(faultFile, '');
		expect(survivor.output()).toContain('fault point after-batch-create reached');
		expect(batchesOf(fake, id)).toBe(2);
		const parts = async () =>
			(await query<{ part: number; route_start: number; resubmit_of: number | null }>(databaseName, 'SELECT part, route_start, resubmit_of FROM pseo_generation_parts WHERE generation_id = $1 ORDER BY part', [id])).map(
				(row) => [Number(row.part), Number(row.route_start), row.resubmit_of === null ? null : Number(row.resubmit_of)],
			);
		expect(await parts()).toEqual([[0, 0, null]]);

		// Both batches expire while both instances are down (a batch's end is set when it is created). The next step
		// finds part 0 expired and looks for part 1 to resubmit it: the batch tagged part 1 is the lost new part, which
		// is stored as such; part 0, and then part 1, are resubmitted once each, and their batches complete.
		fake.configure({ batchEndState: 'completed' });
		fake.releaseBatches();
		for (const instance of cluster.instances) if (!instance.running()) await instance.restart();
		await eventually(async () => (await parts()).length === 4, 60_000, 'both expired parts resubmitted');
		expect(await parts()).toEqual([
			[0, 0, null],
			[1, PART_LINES, null],
			[2, 0, 0],
			[3, PART_LINES, 1],
		]);
		fake.releaseBatches();

		const job = await waitForJob(a, user, id, 60_000);
		expect(job).toMatchObject({ status: 'completed', requested_count: 300, created_count: 300, failed_count: 0, failed_routes: [] });
		expect(batchesOf(fake, id)).toBe(4);
		await expectPostsOnce(a, site.pseoId, site.routes);
		const ledger = await expectLedgerBalances(a, user);
		expect(ledger.map((row) => [row.reason, Number(row.amount)])).toEqual([['grant', 10_000], ['charge', -300 * BATCH_RATE]]);
	});

	it('5 a crash after the trigger committed and before its 202 left: the job is accepted, runs once and is charged once', async () => {
		const user = await createUser(a, { balance: 1000 });
		const site = await plannedSite(a, user, 2);
		const survivor = await crashAt('after-trigger-commit', async () => {
			// The client sees the connection drop: it cannot know whether the job was accepted.
			await expect(call(b, 'POST', ON_DEMAND, { token: user.token, body: { pseo_id: site.pseoId, post_count: 1 } })).rejects.toThrow();
		});
		expect(survivor).toBe(a);
		const [accepted] = await query<{ n: number }>(databaseName, 'SELECT count(*)::int AS n FROM pseo_generations WHERE user_id = $1', [user.id]);
		expect(accepted!.n).toBe(1);

		const jobs = await adminItems(survivor, 'pseo_generations', `filter[user_id][_eq]=${user.id}`);
		expect(jobs).toHaveLength(1);
		const job = await waitForJob(survivor, user, Number(jobs[0].id), 30_000);
		expect(job).toMatchObject({ status: 'completed', created_count: 1, failed_count: 0 });
		await expectPostsOnce(survivor, site.pseoId, site.routes.slice(0, 1));
		expect(fake.countChat(site.routes[0])).toBe(1);
		const ledger = await expectLedgerBalances(survivor, user);
		expect(ledger.map((row) => [row.reason, Number(row.amount)])).toEqual([['grant', 1000], ['charge', -PAGE_RATE]]);
	});

	it('5 a crash after a cancel was stored and before it was carried out: the next worker finishes the cancel', async () => {
		const user = await createUser(a, { balance: 1000 });
		const site = await plannedSite(a, user, 4);
		fake.configure({ holdBatches: true });
		const res = await call(a, 'POST', BULK, { token: user.token, body: { pseo_id: site.pseoId, post_count: 4 } });
		const id = res.body.generation_id as number;
		await eventually(async () => (await jobRow(a, id)).batch_id as string | null, 30_000, 'a stored batch id');
		const survivor = await crashAt('after-cancel-mark', async () => {
			await expect(call(b, 'POST', `/pseo-endpoints/generations/${id}/cancel`, { token: user.token })).rejects.toThrow();
		});
		expect(survivor).toBe(a);

		// Not resumed as work: the stored cancel is carried out, the batch cancelled, every page refunded.
		const job = await waitForJob(survivor, user, id, 30_000);
		expect(job).toMatchObject({ status: 'failed', requested_count: 4, created_count: 0, failed_count: 4 });
		expect(new Set(job['failed_routes'].map((failure: { error: string }) => failure.error))).toEqual(new Set(['cancelled']));
		expect(fake.requests.filter((entry) => entry.method === 'POST' && /^\/v1\/batches\/[^/]+\/cancel$/.test(entry.path))).toHaveLength(1);
		const ledger = await expectLedgerBalances(survivor, user);
		expect(ledger.filter((row) => row.reason === 'refund').map((row) => Number(row.amount))).toEqual(site.routes.map(() => BATCH_RATE));
		expect(await balanceOf(survivor, user.id)).toBe(1000);
	});

	it('5 SIGTERM hands a job with a page in flight to the other live instance at once, not when its lease lapses', async () => {
		const user = await createUser(a, { balance: 1000 });
		const site = await plannedSite(a, user, 2);
		fake.configure({ holdChat: true });
		const res = await call(a, 'POST', ON_DEMAND, { token: user.token, body: { pseo_id: site.pseoId, post_count: 1 } });
		const id = res.body.generation_id as number;
		const owner = await eventually(async () => (await jobRow(a, id)).lease_owner as string | null, 20_000, 'a lease holder');
		const holder = cluster.instanceOf(owner)!;
		const other = holder === a ? b : a;
		await eventually(async () => fake.heldChat() === 1, 20_000, 'the page at the provider');

		await holder.stop();
		// Handed back before the process exited: the lease no longer names the stopped worker, although it was
		// renewed less than a lease ago and would still be live had the worker just died.
		const row = await jobRow(other, id);
		expect(row.lease_owner).not.toBe(owner);
		expect(holder.output()).toContain('pseo jobs handed back for resumption');

		// The stopped worker's call was cut off; the other instance claims the job and asks again.
		await eventually(async () => fake.heldChat() === 1 && (await jobRow(other, id)).lease_owner === cluster.workerOf(other), 20_000, 'the other instance\'s call');
		fake.configure({ holdChat: false });
		expect(fake.releaseChat()).toBe(1);
		const job = await waitForJob(other, user, id, 30_000);
		expect(job).toMatchObject({ status: 'completed', created_count: 1, failed_count: 0, failed_routes: [] });
		await expectPostsOnce(other, site.pseoId, site.routes.slice(0, 1));
		const ledger = await expectLedgerBalances(other, user);
		expect(ledger.map((row) => [row.reason, Number(row.amount)])).toEqual([['grant', 1000], ['charge', -PAGE_RATE]]);
	});

	it('5 a kill -9 of the instance that created a bulk job\'s batch: the other instance polls, ingests and finishes it once', async () => {
		const user = await createUser(a, { balance: 1000 });
		const site = await plannedSite(a, user, 6);
		fake.configure({ holdBatches: true });
		const res = await call(a, 'POST', BULK, { token: user.token, body: { pseo_id: site.pseoId, post_count: 6 } });
		const id = res.body.generation_id as number;
		await eventually(async () => (await jobRow(a, id)).batch_id as string | null, 30_000, 'a stored batch id');
		const submitted = new RegExp(`"jobId":${id},"part":0,"batchId":"[^"]+","lines":6`);
		const creator = [a, b].find((instance) => submitted.test(instance.output()))!;
		const survivor = creator === a ? b : a;
		await creator.kill();

		fake.configure({ holdBatches: false });
		fake.releaseBatches();
		const job = await waitForJob(survivor, user, id, 60_000);
		expect(job).toMatchObject({ status: 'completed', created_count: 6, failed_count: 0, failed_routes: [] });
		expect(batchesOf(fake, id)).toBe(1);
		await expectPostsOnce(survivor, site.pseoId, site.routes);
		const ledger = await expectLedgerBalances(survivor, user);
		expect(ledger.map((row) => [row.reason, Number(row.amount)])).toEqual([['grant', 1000], ['charge', -6 * BATCH_RATE]]);
	});
});

describe.skipIf(missing.length > 0)('two replicas starting at once on a database the extension has never seen', () => {
	const name = `pseo_t${process.pid}_first_${randomBytes(3).toString('hex')}`;
	const dbEnv = { DB_CLIENT: 'pg', DB_HOST: PG.host, DB_PORT: String(PG.port), DB_USER: PG.user, DB_PASSWORD: PG.password, DB_DATABASE: name };
	let fake: FakeProvider;
	let cluster: Cluster | null = null;

	beforeAll(async () => {
		fake = await startFakeProvider();
		await pgAdmin(`CREATE DATABASE "${name}"`);
		// The compose file's first start: a one-shot `directus bootstrap` (Directus's own tables and first admin), then
		// every replica at once, each installing the extension's schema, indexes and policies on start-up.
		const port = await freePort();
		const bootstrap = spawnSync(NODE22, [path.join(ROOT, 'scripts', 'directus-cli.mjs'), 'bootstrap'], {
			cwd: ROOT,
			env: { ...process.env, ...baseEnv(port, path.join(ROOT, '.test-cache', `first-start-${process.pid}`)), ...dbEnv },
			encoding: 'utf8',
		});
		if (bootstrap.status !== 0) throw new Error(`directus bootstrap failed:\n${bootstrap.stdout}\n${bootstrap.stderr}`);
	}, 180_000);
	afterAll(async () => {
		if (cluster) await cluster.dispose();
		else await dropDatabase(name);
		await fake?.close();
	});

	it('5 both come up, the schema, indexes and policies exist once, and each serves the interface', async () => {
		const database: DatabaseCopy = { leg: 'postgres', env: dbEnv, dispose: () => dropDatabase(name) };
		cluster = await startCluster({ size: 2, database, together: true, env: { OPENAI_BASE_URL: fake.url, ...ENV } });
		const [first, second] = cluster.instances as [DirectusInstance, DirectusInstance];
		for (const instance of [first, second]) expect((await fetch(`${instance.url}/pseo-endpoints/`)).status).toBe(200);

		const collections = await query<{ collection: string; n: number }>(
			name,
			`SELECT collection, count(*)::int AS n FROM directus_collections WHERE collection LIKE 'pseo%' GROUP BY collection`,
		);
		expect(collections.map((row) => row.collection).sort()).toEqual(['pseo', 'pseo_batch_capacity', 'pseo_generation_parts', 'pseo_generation_routes', 'pseo_generations', 'pseo_idempotency_keys', 'pseo_main_json', 'pseo_plan_pages', 'pseo_post_bands', 'pseo_posts', 'pseo_provider_pacing', 'pseo_publications', 'pseo_publishing_targets', 'pseo_schema_state', 'pseo_token_ledger']);
		expect(collections.every((row) => row.n === 1)).toBe(true);
		const doubledFields = await query(
			name,
			`SELECT collection, field FROM directus_fields WHERE collection LIKE 'pseo%' OR field LIKE 'pseo%' GROUP BY collection, field HAVING count(*) > 1`,
		);
		expect(doubledFields).toEqual([]);
		const policies = await query<{ name: string; n: number }>(name, `SELECT name, count(*)::int AS n FROM directus_policies WHERE name LIKE 'pSEO%' GROUP BY name`);
		expect(policies.map((row) => [row.name, row.n]).sort()).toEqual([['pSEO app access', 1], ['pSEO user', 1]]);
		const uniqueIndexes = await query<{ indexdef: string }>(
			name,
			`SELECT tablename, indexdef FROM pg_indexes WHERE tablename IN ('pseo_generations', 'pseo_posts', 'pseo_publications', 'pseo_publishing_targets', 'pseo_idempotency_keys') AND indexdef LIKE '%UNIQUE%'`,
		);
		// One active job and one active publication per website, one target per website: each index exists once.
		expect(uniqueIndexes.filter((row) => /\(active_pseo_id\)/.test(row.indexdef)).map((row) => (row as { tablename?: string }).tablename).sort()).toEqual(['pseo_generations', 'pseo_publications']);
		expect(uniqueIndexes.filter((row) => /pseo_publishing_targets/.test(row.indexdef) && /\(pseo_id\)/.test(row.indexdef))).toHaveLength(1);
		expect(uniqueIndexes.filter((row) => /\(pseo_id, route\)/.test(row.indexdef))).toHaveLength(1);
		// One row per Idempotency-Key of a user on a route.
		expect(uniqueIndexes.filter((row) => /\(user_id, scope, idempotency_key\)/.test(row.indexdef))).toHaveLength(1);

		// Each replica serves the interface: a website, a plan and a job through one, read back through the other.
		const user = await createUser(first, { balance: 100 });
		for (const [writer, reader] of [[first, second], [second, first]] as const) {
			const site = await plannedSite(writer, user, 2);
			const res = await call(writer, 'POST', ON_DEMAND, { token: user.token, body: { pseo_id: site.pseoId, post_count: 1 } });
			expect(res.status).toBe(202);
			expect((await waitForJob(reader, user, res.body.generation_id, 30_000))['status']).toBe('completed');
		}
		expect(await balanceOf(first, user.id)).toBe(100 - 2 * PAGE_RATE);
	});
});
