import { beforeAll, expect, it } from 'vitest';
import type { Knex } from 'knex';
import { describeOnVendors, insertPendingJob, insertUser, insertWebsite, silentLogger } from '../../test/support/db-under-test.ts';
import { LEDGER_TABLE, readBalance } from '../ledger/token-ledger.ts';
import { POSTS } from '../posts/post-store.ts';
import type { PageContent } from '../posts/post-store.ts';
import {
	claimJob,
	findClaimable,
	finishJob,
	insertJob,
	JOBS,
	LeaseLostError,
	legacyJobRoutes,
	readJob,
	readJobHead,
	recordOutcomes,
	releaseJob,
	renewLease,
	settledAmong,
} from './job-store.ts';
import { JOB_ROUTES, migrateJobRoutes, readJobRouteNames, readJobRouteRange } from './job-route-store.ts';
import { readParts, savePart, setPartStatus } from './part-store.ts';

/*
 * The job store's claim, lease and fence, on the real schema of PostgreSQL and MariaDB. Concurrency is real: each
 * racer runs on its own pooled connection.
 */

const LEASE_MS = 60_000;

function content(route: string): PageContent {
	return { title: `Title ${route}`, meta_title: null, meta_description: null, h1: null, body: `Body of ${route}`, faq: [], internal_links: [] };
}

describeOnVendors('job store', (database) => {
	let knex: Knex;

	beforeAll(() => {
		knex = database().knex;
	});

	async function freshJob(routes = ['/a', '/b'], rate = 5) {
		const userId = await insertUser(knex, 1000);
		const pseoId = await insertWebsite(knex, userId);
		const id = await insertPendingJob(knex, { userId, pseoId, routes, rate });
		return { userId, pseoId, id };
	}

	/** Makes the job's lease lapse now, as a stalled or dead holder's does. */
	async function lapse(id: number) {
		await knex(JOBS).where('id', id).update({ lease_expires_at: Date.now() - 1 });
	}

	const posts = async (pseoId: number) => Number((await knex(POSTS).where('pseo_id', pseoId).count({ n: '*' }).first())!['n']);
	const refunds = async (userId: string) =>
		Number((await knex(LEDGER_TABLE).where({ user_id: userId, reason: 'refund' }).count({ n: '*' }).first())!['n']);

	it('one of eight simultaneous claims of a pending job wins', async () => {
		const { id } = await freshJob();
		const workers = Array.from({ length: 8 }, (_, i) => `w${i}`);
		const wins = await Promise.all(workers.map((worker) => claimJob(knex, id, worker, LEASE_MS, silentLogger)));
		expect(wins.filter(Boolean)).toHaveLength(1);
		const job = await readJob(knex, id);
		expect(job).toMatchObject({ status: 'running', lease_owner: workers[wins.indexOf(true)], attempts: 1 });
	});

	it('a live lease cannot be claimed; a lapsed one can, once, and the claim is counted', async () => {
		const { id } = await freshJob();
		expect(await claimJob(knex, id, 'a', LEASE_MS, silentLogger)).toBe(true);
		expect(await claimJob(knex, id, 'b', LEASE_MS, silentLogger)).toBe(false);
		await lapse(id);
		const takeovers = await Promise.all(['b', 'c', 'd'].map((worker) => claimJob(knex, id, worker, LEASE_MS, silentLogger)));
		expect(takeovers.filter(Boolean)).toHaveLength(1);
		expect((await readJob(knex, id))!.attempts).toBe(2);
	});

	it('findClaimable lists pending jobs and lapsed leases that are due, and nothing else', async () => {
		const pending = (await freshJob()).id;
		const leased = (await freshJob()).id;
		const lapsed = (await freshJob()).id;
		const waiting = (await freshJob()).id;
		for (const id of [leased, lapsed, waiting]) expect(await claimJob(knex, id, 'holder', LEASE_MS, silentLogger)).toBe(true);
		await lapse(lapsed);
		await releaseJob(knex, waiting, 'holder', Date.now() + 60_000);
		const found = await findClaimable(knex, Date.now(), 10_000);
		const claimable = new Set(found.map((job) => job.id));
		expect(claimable.has(pending)).toBe(true);
		// A lapsed lease is a takeover of another worker's job; a pending job is not.
		expect(found.find((job) => job.id === lapsed)?.takeover).toBe(true);
		expect(found.find((job) => job.id === pending)?.takeover).toBe(false);
		expect(claimable.has(lapsed)).toBe(true);
		expect(claimable.has(leased)).toBe(false);
		expect(claimable.has(waiting)).toBe(false);
		// Due once its poll time has come.
		expect(new Set((await findClaimable(knex, Date.now() + 61_000, 10_000)).map((job) => job.id)).has(waiting)).toBe(true);
		expect(await claimJob(knex, waiting, 'other', LEASE_MS, silentLogger)).toBe(false);
	});

	it('renew and release act only for the lease holder', async () => {
		const { id } = await freshJob();
		expect(await claimJob(knex, id, 'a', LEASE_MS, silentLogger)).toBe(true);
		expect(await renewLease(knex, id, 'a', LEASE_MS)).toBe(true);
		expect(await renewLease(knex, id, 'b', LEASE_MS)).toBe(false);
		await releaseJob(knex, id, 'b');
		expect((await readJob(knex, id))!.lease_owner).toBe('a');
		await lapse(id);
		expect(await claimJob(knex, id, 'b', LEASE_MS, silentLogger)).toBe(true);
		expect(await renewLease(knex, id, 'a', LEASE_MS)).toBe(false);
		await releaseJob(knex, id, 'b');
		expect(await readJob(knex, id)).toMatchObject({ status: 'running', lease_owner: null });
		// Handed back, not lapsed: claiming it again is no takeover.
		expect(await findClaimable(knex, Date.now(), 10_000)).toContainEqual({ id, takeover: false });
	});

	it('after a takeover, every write of the old holder is refused and changes nothing', async () => {
		const { id, userId, pseoId } = await freshJob();
		expect(await claimJob(knex, id, 'old', LEASE_MS, silentLogger)).toBe(true);
		const job = (await readJob(knex, id))!;
		await lapse(id);
		expect(await claimJob(knex, id, 'new', LEASE_MS, silentLogger)).toBe(true);
		const balance = await readBalance(knex, userId);

		await expect(recordOutcomes(knex, job, 'old', [{ route: '/a', content: content('/a') }, { route: '/b', error: 'late failure' }], silentLogger)).rejects.toBeInstanceOf(
			LeaseLostError,
		);
		await expect(finishJob(knex, id, 'old')).rejects.toBeInstanceOf(LeaseLostError);
		const part = { part: 0, route_start: 0, route_end: 2, batch_id: 'batch_late', input_file_id: 'file_late', resubmit_of: null };
		await expect(savePart(knex, id, 'old', part)).rejects.toBeInstanceOf(LeaseLostError);
		await expect(setPartStatus(knex, id, 'old', 0, 'ingested')).rejects.toBeInstanceOf(LeaseLostError);
		expect(await readParts(knex, id)).toEqual([]);

		expect(await readJob(knex, id)).toMatchObject({ status: 'running', lease_owner: 'new', created_count: 0, failed_count: 0, failed_routes: [], batch_id: null });
		expect(await posts(pseoId)).toBe(0);
		expect(await refunds(userId)).toBe(0);
		expect(await readBalance(knex, userId)).toBe(balance);
	});

	it('the holder\'s outcomes count once however often they are recorded, a failure refunded once', async () => {
		const { id, userId, pseoId } = await freshJob(['/a', '/b', '/c'], 5);
		expect(await claimJob(knex, id, 'w', LEASE_MS, silentLogger)).toBe(true);
		const job = (await readJob(knex, id))!;
		const balance = await readBalance(knex, userId);
		const outcomes = [
			{ route: '/a', content: content('/a') },
			{ route: '/b', error: 'provider failed' },
		];
		expect(await recordOutcomes(knex, job, 'w', outcomes, silentLogger)).toEqual({ created: 1, failed: 1 });
		expect(await recordOutcomes(knex, job, 'w', outcomes, silentLogger)).toEqual({ created: 0, failed: 0 });
		// Concurrent twins of the same chunk (a retried write): still once.
		await Promise.all([recordOutcomes(knex, job, 'w', outcomes, silentLogger), recordOutcomes(knex, job, 'w', outcomes, silentLogger)]);
		expect(await readJob(knex, id)).toMatchObject({ created_count: 1, failed_count: 1, failed_routes: [{ route: '/b', error: 'provider failed' }] });
		expect(await posts(pseoId)).toBe(1);
		expect(await refunds(userId)).toBe(1);
		expect(await readBalance(knex, userId)).toBe(balance + 5);
		expect(Number((await knex('pseo').where('id', pseoId).first('post_counts_total'))!.post_counts_total)).toBe(1);

		// Not every page created: the job ends failed and frees its website.
		expect(await finishJob(knex, id, 'w')).toBe('failed');
		expect(await readJob(knex, id)).toMatchObject({ status: 'failed', lease_owner: null });
		expect((await knex(JOBS).where('id', id).first('active_pseo_id'))!.active_pseo_id).toBeNull();
		await expect(finishJob(knex, id, 'w')).rejects.toBeInstanceOf(LeaseLostError);
	});

	const routeRows = async (id: number) =>
		(await knex(JOB_ROUTES).where('generation_id', id).orderBy('position').select('position', 'route', 'state', 'part', 'error')).map((row) => ({
			...row,
			position: Number(row.position),
			part: row.part === null ? null : Number(row.part),
		}));

	it('a job\'s routes are rows in its order, each with its stored state: queued, in a part, created, failed with its error', async () => {
		const { id } = await freshJob(['/a', '/b', '/c', '/d'], 5);
		expect(await claimJob(knex, id, 'w', LEASE_MS, silentLogger)).toBe(true);
		expect((await routeRows(id)).map((row) => [row.route, row.state])).toEqual([['/a', 'queued'], ['/b', 'queued'], ['/c', 'queued'], ['/d', 'queued']]);
		const job = (await readJob(knex, id))!;
		expect(job.routes.map((page) => [page.route, page.title, page.priority])).toEqual([['/a', 'Page /a', 4], ['/b', 'Page /b', 3], ['/c', 'Page /c', 2], ['/d', 'Page /d', 1]]);

		await savePart(knex, id, 'w', { part: 0, route_start: 0, route_end: 3, batch_id: 'batch_r', input_file_id: null, resubmit_of: null });
		await recordOutcomes(knex, job, 'w', [{ route: '/a', content: content('/a') }, { route: '/b', error: 'provider failed' }], silentLogger);
		expect(await routeRows(id)).toEqual([
			{ position: 0, route: '/a', state: 'created', part: 0, error: null },
			{ position: 1, route: '/b', state: 'failed', part: 0, error: 'provider failed' },
			{ position: 2, route: '/c', state: 'in_part', part: 0, error: null },
			{ position: 3, route: '/d', state: 'queued', part: null, error: null },
		]);
		// A later part never takes back a settled route.
		await savePart(knex, id, 'w', { part: 1, route_start: 0, route_end: 4, batch_id: 'batch_s', input_file_id: null, resubmit_of: null });
		expect((await routeRows(id)).map((row) => [row.state, row.part])).toEqual([['created', 0], ['failed', 0], ['in_part', 1], ['in_part', 1]]);
		const states = (await routeRows(id)).reduce<Record<string, number>>((counts, row) => ({ ...counts, [row.state]: (counts[row.state] ?? 0) + 1 }), {});
		expect(states).toEqual({ in_part: 2, created: 1, failed: 1 });

		expect((await readJob(knex, id))!.failed_routes).toEqual([{ route: '/b', error: 'provider failed' }]);
	});

	it('a job is read without its routes by position range, page at a time, with its route count and what is settled', async () => {
		const routes = Array.from({ length: 7 }, (_, i) => `/r${i}`);
		const { id, pseoId } = await freshJob(routes);
		const head = (await readJobHead(knex, id))!;
		expect(head).toMatchObject({ id, pseo_id: pseoId, route_count: 7, requested_count: 7 });
		expect('routes' in head).toBe(false);
		const middle = await readJobRouteRange(knex, id, 2, 5);
		expect(middle.map((item) => [item.position, item.route, item.title, item.priority])).toEqual([
			[2, '/r2', 'Page /r2', 5],
			[3, '/r3', 'Page /r3', 4],
			[4, '/r4', 'Page /r4', 3],
		]);
		expect(await readJobRouteRange(knex, id, 6, 100)).toHaveLength(1);
		expect(new Set(await readJobRouteNames(knex, id))).toEqual(new Set(routes));
		expect((await readJobHead(knex, (await freshJob([])).id))!.route_count).toBe(0);

		// Settled: a post of the website (any job's) or this job's recorded failure; the rest is still to do.
		expect(await claimJob(knex, id, 'w', LEASE_MS, silentLogger)).toBe(true);
		await recordOutcomes(knex, head, 'w', [{ route: '/r1', content: content('/r1') }, { route: '/r3', error: 'bad output' }], silentLogger);
		expect(await settledAmong(knex, head, ['/r0', '/r1', '/r2', '/r3'])).toEqual(new Set(['/r1', '/r3']));
		const whole = (await readJob(knex, id))!;
		expect(whole.routes.map((item) => item.route)).toEqual(routes);
		expect(whole.failed_routes).toEqual([{ route: '/r3', error: 'bad output' }]);
	});

	it('a job stored with its routes as JSON gets them as rows on start-up, once, with their states, even on two instances at once', async () => {
		const { id, userId, pseoId } = await freshJob(['/x'], 5);
		// As a job was stored before routes were rows: the arrays on the job, no rows.
		await knex(JOB_ROUTES).where('generation_id', id).delete();
		await knex(JOBS)
			.where('id', id)
			.update({
				routes: JSON.stringify([
					{ route: '/old-1', title: 'Old 1', priority: 3, cluster: 'c' },
					{ route: '/old-2', title: 'Old 2', priority: 2 },
					{ route: '/old-3', title: 'Old 3', priority: 1 },
				]),
				failed_routes: JSON.stringify([{ route: '/old-2', error: 'expired' }]),
				requested_count: 3,
			});
		await knex(POSTS).insert({ pseo_id: pseoId, generation_id: id, user_id: userId, route: '/old-1', title: 'Old 1', body: 'Body', date_created: new Date() });

		await Promise.all([migrateJobRoutes(knex, silentLogger, legacyJobRoutes), migrateJobRoutes(knex, silentLogger, legacyJobRoutes)]);
		expect((await routeRows(id)).map((row) => [row.position, row.route, row.state, row.error])).toEqual([
			[0, '/old-1', 'created', null],
			[1, '/old-2', 'failed', 'expired'],
			[2, '/old-3', 'queued', null],
		]);
		const job = (await readJob(knex, id))!;
		expect(job.routes[0]).toMatchObject({ route: '/old-1', title: 'Old 1', priority: 3, cluster: 'c' });
		expect(job.failed_routes).toEqual([{ route: '/old-2', error: 'expired' }]);
		// Once: a second start finds nothing to do.
		await migrateJobRoutes(knex, silentLogger, legacyJobRoutes);
		expect(await routeRows(id)).toHaveLength(3);
		// A job stored the old way after start-up (by an instance of the previous version) is migrated when read for work.
		await knex(JOB_ROUTES).where('generation_id', id).delete();
		expect((await readJob(knex, id))!.routes.map((page) => page.route)).toEqual(['/old-1', '/old-2', '/old-3']);
		expect((await routeRows(id)).map((row) => row.state)).toEqual(['created', 'failed', 'queued']);
	});

	it('a job whose every page was created ends completed; its stored batch id survives', async () => {
		const { id } = await freshJob(['/only'], 5);
		expect(await claimJob(knex, id, 'w', LEASE_MS, silentLogger)).toBe(true);
		await savePart(knex, id, 'w', { part: 0, route_start: 0, route_end: 1, batch_id: 'batch_1', input_file_id: 'file_1', resubmit_of: null });
		const job = (await readJob(knex, id))!;
		expect(job).toMatchObject({ batch_id: 'batch_1', batch_input_file_id: 'file_1' });
		// A part stored without its size and provider (an adopted or older one) reads back with neither.
		expect(await readParts(knex, id)).toEqual([
			{ part: 0, route_start: 0, route_end: 1, batch_id: 'batch_1', input_file_id: 'file_1', resubmit_of: null, status: 'running', estimated_tokens: null, capacity_key: null },
		]);
		await recordOutcomes(knex, job, 'w', [{ route: '/only', content: content('/only') }], silentLogger);
		expect(await finishJob(knex, id, 'w')).toBe('completed');
	});

	it('parts of a bulk job: one row per part, a resubmission closes the expired part it repeats', async () => {
		const { id } = await freshJob(['/a', '/b', '/c'], 5);
		expect(await claimJob(knex, id, 'w', LEASE_MS, silentLogger)).toBe(true);
		await savePart(knex, id, 'w', { part: 0, route_start: 0, route_end: 2, batch_id: 'batch_0', input_file_id: 'file_0', resubmit_of: null });
		await savePart(knex, id, 'w', { part: 1, route_start: 2, route_end: 3, batch_id: 'batch_1', input_file_id: 'file_1', resubmit_of: null });
		// Another worker that lost the race to store part 1 fails on the unique index, and stores nothing.
		await expect(savePart(knex, id, 'w', { part: 1, route_start: 2, route_end: 3, batch_id: 'batch_x', input_file_id: null, resubmit_of: null })).rejects.toThrow();
		await setPartStatus(knex, id, 'w', 0, 'expired');
		await savePart(knex, id, 'w', { part: 2, route_start: 0, route_end: 2, batch_id: 'batch_2', input_file_id: 'file_2', resubmit_of: 0 });
		const parts = await readParts(knex, id);
		expect(parts.map(({ part, status, batch_id, resubmit_of }) => ({ part, status, batch_id, resubmit_of }))).toEqual([
			{ part: 0, status: 'ingested', batch_id: 'batch_0', resubmit_of: null },
			{ part: 1, status: 'running', batch_id: 'batch_1', resubmit_of: null },
			{ part: 2, status: 'running', batch_id: 'batch_2', resubmit_of: 0 },
		]);
		// The job's own batch id stays its first part's.
		expect((await readJob(knex, id))!.batch_id).toBe('batch_0');
	});

	it('one active job per website: a second one fails on the unique index', async () => {
		const { userId, pseoId } = await freshJob();
		await expect(
			knex.transaction((trx) => insertJob(trx, { pseoId, userId, mode: 'bulk', kind: 'bulk', routes: [{ route: '/x', title: 'X', priority: 1 }], rate: 5, planId: null })),
		).rejects.toThrow();
		expect(Number((await knex(JOBS).where('pseo_id', pseoId).count({ n: '*' }).first())!['n'])).toBe(1);
	});
});
