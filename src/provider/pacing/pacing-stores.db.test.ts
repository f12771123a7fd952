import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { describeOnVendors, silentLogger } from '../../../test/support/db-under-test.ts';
import { REDIS_URL } from '../../../test/support/paths.ts';
import { redisDeleteMatching, redisReachable } from '../../../test/support/redis.ts';
import { createDatabasePacingStore, PACING_TABLE } from './database-pacing-store.ts';
import { createMemoryPacingStore, type PacingStore } from './pacing-store.ts';
import { createRedisPacingStore } from './redis-pacing-store.ts';
import { cadenceOf, type SlotDemand } from './slot-schedule.ts';

/*
 * The shared stores of the pacing keep one schedule per key for every instance: two stores on one Redis or one
 * database are two instances. The same promises hold for each of them, and for the memory store of one process.
 */

const T0 = 1_700_000_000_000;
const FOUR_A_SECOND: SlotDemand = { requests: cadenceOf(4, 1000), tokens: null, tokenCount: 0 };
/** The slots of 40 calls of a 4-a-second limit arriving at once: a burst of three, then 250 ms apart. */
const IDEAL = [0, 0, 0, ...Array.from({ length: 37 }, (_, i) => 100 + 250 * i)];

const newKey = () => `openai:test-${randomBytes(6).toString('hex')}`;

function storeContract(stores: () => [PacingStore, PacingStore]): void {
	it('reserve gives the calls of two instances slots of one schedule', async () => {
		const [one, other] = stores();
		const key = newKey();
		const times: number[] = [];
		for (let i = 0; i < 3; i++) {
			times.push((await one.reserve(key, FOUR_A_SECOND, T0, Number.POSITIVE_INFINITY)).at - T0);
			times.push((await other.reserve(key, FOUR_A_SECOND, T0, Number.POSITIVE_INFINITY)).at - T0);
		}
		expect(times).toEqual([0, 0, 0, 100, 350, 600]);
	});

	it('reserve never gives two racing instances the same slot', async () => {
		const [one, other] = stores();
		const key = newKey();
		// Each instance takes its slots one after another (the pacer's own queue), both at once.
		const chain = async (store: PacingStore) => {
			const taken: number[] = [];
			for (let i = 0; i < 20; i++) taken.push((await store.reserve(key, FOUR_A_SECOND, T0, Number.POSITIVE_INFINITY)).at - T0);
			return taken;
		};
		const [a, b] = await Promise.all([chain(one), chain(other)]);
		expect([...a, ...b].sort((x, y) => x - y)).toEqual(IDEAL);
	});

	it('reserve says when the next slot is but takes none later than notAfter', async () => {
		const [one, other] = stores();
		const key = newKey();
		for (let i = 0; i < 4; i++) await one.reserve(key, FOUR_A_SECOND, T0, Number.POSITIVE_INFINITY);
		expect(await other.reserve(key, FOUR_A_SECOND, T0, T0 + 300)).toMatchObject({ at: T0 + 350, taken: false });
		expect(await one.reserve(key, FOUR_A_SECOND, T0, T0 + 400)).toMatchObject({ at: T0 + 350, taken: true });
	});

	it('paces by tokens with the requests', async () => {
		const [one, other] = stores();
		const key = newKey();
		const demand: SlotDemand = { requests: cadenceOf(4, 1000), tokens: cadenceOf(1000, 1000), tokenCount: 500 };
		const times = [];
		for (const store of [one, other, one, other]) times.push((await store.reserve(key, demand, T0, Number.POSITIVE_INFINITY)).at - T0);
		expect(times).toEqual([0, 100, 600, 1100]);
	});

	it('hold keeps every instance\'s next slot back until the wait a 429 asked for', async () => {
		const [one, other] = stores();
		const key = newKey();
		await one.reserve(key, FOUR_A_SECOND, T0, Number.POSITIVE_INFINITY);
		await one.hold(key, T0 + 5000);
		// An earlier hold does not shorten it.
		await other.hold(key, T0 + 1000);
		expect((await other.read(key)).holdUntil).toBe(T0 + 5000);
		expect((await other.reserve(key, FOUR_A_SECOND, T0, Number.POSITIVE_INFINITY)).at).toBe(T0 + 5000);
	});

	it('hold moves the request schedule on, so that no burst follows it', async () => {
		const [one, other] = stores();
		const key = newKey();
		// The bucket is empty until T0 + 1000: the schedule is as full as a burst from then.
		await one.hold(key, T0 + 1000, T0 + 1000 + 900 - 250);
		const times = [];
		for (const store of [other, one, other]) times.push((await store.reserve(key, FOUR_A_SECOND, T0, Number.POSITIVE_INFINITY)).at - T0);
		expect(times).toEqual([1000, 1250, 1500]);
	});

	it('learn sets a rate once for the instances that saw the same 429', async () => {
		const [one, other] = stores();
		const key = newKey();
		const first = await one.learn(key, null, { rate: 2, since: T0, phase: 'start' });
		expect(first).toEqual({ rate: 2, since: T0, phase: 'start' });
		// The other instance saw the same state before: its cut is not applied on top.
		expect(await other.learn(key, null, { rate: 1.5, since: T0 + 5, phase: 'start' })).toEqual(first);
		expect(await other.learn(key, first, { rate: 1.6, since: T0 + 10, phase: 'steady' })).toEqual({ rate: 1.6, since: T0 + 10, phase: 'steady' });
		expect((await one.read(key)).learnt).toEqual({ rate: 1.6, since: T0 + 10, phase: 'steady' });
	});
}

describe('the memory pacing store', () => {
	const store = createMemoryPacingStore();
	storeContract(() => [store, store]);
});

const redisUp = await redisReachable(REDIS_URL);

describe('the Redis pacing store', () => {
	describe.skipIf(!redisUp)(`at ${REDIS_URL}`, () => {
		const one = createRedisPacingStore(REDIS_URL, silentLogger);
		const other = createRedisPacingStore(REDIS_URL, silentLogger);
		afterAll(async () => {
			await Promise.all([one.close(), other.close()]);
			await redisDeleteMatching(REDIS_URL, 'pseo:pacing:openai:test-*');
		});
		storeContract(() => [one, other]);
	});
});

describeOnVendors('the database pacing store', (database) => {
	let stores: [PacingStore, PacingStore];
	beforeAll(() => {
		stores = [createDatabasePacingStore(database().knex), createDatabasePacingStore(database().knex)];
	});
	storeContract(() => stores);

	it('stores a digest of the key, never the key, and one row per key', async () => {
		const key = newKey();
		await stores[0].reserve(key, FOUR_A_SECOND, T0, Number.POSITIVE_INFINITY);
		await stores[1].reserve(key, FOUR_A_SECOND, T0, Number.POSITIVE_INFINITY);
		const rows = (await database().knex(PACING_TABLE).where('id', key)) as { provider: string; request_tat_us: unknown }[];
		expect(rows).toHaveLength(1);
		expect(rows[0]).toMatchObject({ provider: 'openai' });
		expect(Number(rows[0]!.request_tat_us)).toBe((T0 + 500) * 1000);
	});
});
