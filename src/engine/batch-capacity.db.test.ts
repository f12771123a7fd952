import { expect, it } from 'vitest';
import { describeOnVendors, insertPendingJob, insertUser, insertWebsite, silentLogger } from '../../test/support/db-under-test.ts';
import { batchQueues, learnLimit, withBatchCapacity } from './batch-capacity.ts';
import { claimJob, setWaitingFor } from './job-store.ts';
import { savePart } from './part-store.ts';

/*
 * A provider's batch queue, shared by the instances through the database: the room a part may take is the limit less
 * what every running part of that provider holds; one worker submits at a time; jobs waiting for the queue take turns.
 */
describeOnVendors('batch capacity', (database) => {
	let serial = 0;
	/** A claimed bulk job of `worker`, and a fresh provider key, so that tests do not see each other's queues. */
	async function claimedJob(worker = 'w'): Promise<number> {
		const knex = database().knex;
		const userId = await insertUser(knex, 1000);
		const pseoId = await insertWebsite(knex, userId);
		const id = await insertPendingJob(knex, { userId, pseoId, routes: Array.from({ length: 6 }, (_, i) => `/p${i}`), mode: 'bulk' });
		expect(await claimJob(knex, id, worker, 60_000, silentLogger)).toBe(true);
		return id;
	}
	const freshKey = () => `test_provider_${process.pid}_${++serial}`;
	const part = (key: string, number: number, tokens: number, start: number) => ({
		part: number,
		route_start: start,
		route_end: start + 1,
		batch_id: `batch_${key}_${number}`,
		input_file_id: null,
		resubmit_of: null,
		estimated_tokens: tokens,
		capacity_key: key,
	});

	it('gives a part the room the limit leaves beside every running part of that provider, and none once it is full', async () => {
		const knex = database().knex;
		const key = freshKey();
		const job = await claimedJob();
		await savePart(knex, job, 'w', part(key, 0, 600, 0));
		const budgets: (number | null)[] = [];
		const outcome = await withBatchCapacity(knex, { key, jobId: job, worker: 'w', configured: 1000 }, async (budget, enqueued) => {
			budgets.push(budget, enqueued);
			return 'sent';
		});
		expect(outcome).toEqual({ ran: true, value: 'sent' });
		expect(budgets).toEqual([400, 600]);
		await savePart(knex, job, 'w', part(key, 1, 400, 1));
		const full = await withBatchCapacity(knex, { key, jobId: job, worker: 'w', configured: 1000 }, async () => 'sent');
		expect(full).toEqual({ ran: false, wait: { reason: 'full', enqueued: 1000, limit: 1000 } });
		// Room for less than one line of the job beside running parts is no room: nothing is built for it.
		const scant = await withBatchCapacity(knex, { key, jobId: job, worker: 'w', configured: 1100, minimum: 150 }, async () => 'sent');
		expect(scant).toEqual({ ran: false, wait: { reason: 'full', enqueued: 1000, limit: 1100 } });
		// Another provider's queue is its own.
		expect(await withBatchCapacity(knex, { key: freshKey(), jobId: job, worker: 'w', configured: 1000 }, async (budget) => budget)).toEqual({ ran: true, value: 1000 });
	});

	it('without a known limit, parts go as they come; a refusal teaches the limit, the smallest wins, and a configured one still binds', async () => {
		const knex = database().knex;
		const key = freshKey();
		const job = await claimedJob();
		expect(await withBatchCapacity(knex, { key, jobId: job, worker: 'w', configured: null }, async (budget, enqueued) => [budget, enqueued])).toEqual({ ran: true, value: [null, 0] });
		// Refused with 700 enqueued beside it: the queue holds 700.
		expect(await learnLimit(knex, key, 700, 300)).toBe(700);
		await savePart(knex, job, 'w', part(key, 0, 500, 0));
		expect(await withBatchCapacity(knex, { key, jobId: job, worker: 'w', configured: null }, async (budget) => budget)).toEqual({ ran: true, value: 200 });
		// A part refused alone is too big for the queue: half of it is tried.
		expect(await learnLimit(knex, key, 0, 300)).toBe(150);
		expect(await withBatchCapacity(knex, { key, jobId: job, worker: 'w', configured: null }, async (budget) => budget)).toMatchObject({ ran: false, wait: { reason: 'full', limit: 150 } });
		// A larger refusal does not raise what was learnt; a configured limit below it binds.
		expect(await learnLimit(knex, key, 900, null)).toBe(150);
		const queues = await batchQueues(knex, { [key]: 120 }, [key]);
		expect(queues.get(key)).toEqual({ limit_tokens: 120, limit_source: 'configured', enqueued_tokens: 500, jobs_waiting: 0 });
		expect((await batchQueues(knex, {}, [key])).get(key)).toEqual({ limit_tokens: 150, limit_source: 'learnt', enqueued_tokens: 500, jobs_waiting: 0 });
	});

	it('lets one worker submit to a limited queue at a time: another is told the queue is busy until the first is done', async () => {
		const knex = database().knex;
		const key = freshKey();
		const first = await claimedJob('w1');
		const second = await claimedJob('w2');
		let release!: () => void;
		const held = new Promise<void>((resolve) => (release = resolve));
		let started!: () => void;
		const submitting = new Promise<void>((resolve) => (started = resolve));
		const running = withBatchCapacity(knex, { key, jobId: first, worker: 'w1', configured: 1000 }, async () => {
			started();
			await held;
			return 'first';
		});
		await submitting;
		expect(await withBatchCapacity(knex, { key, jobId: second, worker: 'w2', configured: 1000 }, async () => 'second')).toEqual({ ran: false, wait: { reason: 'busy', limit: 1000 } });
		release();
		expect(await running).toEqual({ ran: true, value: 'first' });
		expect(await withBatchCapacity(knex, { key, jobId: second, worker: 'w2', configured: 1000 }, async () => 'second')).toEqual({ ran: true, value: 'second' });
	});

	it('takes jobs waiting for the queue in turns: the one with the fewest parts taken first, the oldest on a tie', async () => {
		const knex = database().knex;
		const key = freshKey();
		const big = await claimedJob();
		const small = await claimedJob();
		await savePart(knex, big, 'w', part(key, 0, 100, 0));
		await savePart(knex, big, 'w', part(key, 1, 100, 1));
		await setWaitingFor(knex, big, 'w', key);
		await setWaitingFor(knex, small, 'w', key);
		const turn = (jobId: number) => withBatchCapacity(knex, { key, jobId, worker: 'w', configured: 1000 }, async () => 'sent');
		// The big job has had two parts taken, the small one none: the small one goes first.
		expect(await turn(big)).toEqual({ ran: false, wait: { reason: 'turn', ahead: 1, enqueued: 200, limit: 1000 } });
		expect(await turn(small)).toEqual({ ran: true, value: 'sent' });
		await savePart(knex, small, 'w', part(key, 0, 100, 0));
		await savePart(knex, small, 'w', part(key, 1, 100, 1));
		// Two parts each: the older job goes first.
		expect(await turn(small)).toMatchObject({ ran: false, wait: { reason: 'turn', ahead: 1 } });
		expect(await turn(big)).toEqual({ ran: true, value: 'sent' });
		expect((await batchQueues(knex, {}, [])).get(key)).toMatchObject({ enqueued_tokens: 400, jobs_waiting: 2 });
		// A job out of the queue takes no turn from the others.
		await setWaitingFor(knex, big, 'w', null);
		expect(await turn(small)).toEqual({ ran: true, value: 'sent' });
	});
});
