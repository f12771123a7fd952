import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { itemsChanged, setItemAnnouncer } from './item-events.ts';

/** Directus's ItemsService as the announcer uses it: records each updateMany, fails when told to. */
function fakeServices(failures: number) {
	const calls: { collection: string; keys: unknown[]; payload: unknown; options: unknown }[] = [];
	let left = failures;
	class ItemsService {
		readonly collection: string;
		constructor(collection: string) {
			this.collection = collection;
		}
		async updateMany(keys: unknown[], payload: unknown, options: unknown) {
			calls.push({ collection: this.collection, keys, payload, options });
			if (left-- > 0) throw new Error('database is locked');
			return keys;
		}
	}
	const logger = { debug: vi.fn(), info: vi.fn(), warn: vi.fn(), error: vi.fn() };
	return { calls, logger, context: { services: { ItemsService }, getSchema: async () => ({}) as never, logger } };
}

/** Moves the fake clock on, running the announcer's timers and the promises they start. */
const after = (ms: number) => vi.advanceTimersByTimeAsync(ms);

describe('item announcements', () => {
	beforeEach(() => vi.useFakeTimers());
	afterEach(() => {
		setItemAnnouncer(null);
		vi.useRealTimers();
	});

	it('coalesce the changes of a window into one empty update per collection, without purging the cache', async () => {
		const { calls, context } = fakeServices(0);
		setItemAnnouncer(context);
		itemsChanged('pseo_generations', [1]);
		itemsChanged('pseo_generations', [2, 1]);
		itemsChanged('pseo_publications', [7]);
		itemsChanged('pseo_generations', []);
		expect(calls).toEqual([]);
		await after(249);
		expect(calls).toEqual([]);
		await after(1);
		expect(calls).toEqual([
			{ collection: 'pseo_generations', keys: [1, 2], payload: {}, options: { autoPurgeCache: false } },
			{ collection: 'pseo_publications', keys: [7], payload: {}, options: { autoPurgeCache: false } },
		]);
	});

	it('try a failed announcement once more, then give it up with a warning', async () => {
		const { calls, context, logger } = fakeServices(5);
		setItemAnnouncer(context);
		itemsChanged('pseo_generations', [3]);
		await after(250);
		expect(calls.map((call) => call.keys)).toEqual([[3]]);
		await after(250);
		expect(calls.map((call) => call.keys)).toEqual([[3], [3]]);
		await after(1000);
		expect(calls.map((call) => call.keys)).toEqual([[3], [3]]);
		expect(logger.warn).toHaveBeenCalledTimes(2);
	});

	it('send nothing once the announcer is removed', async () => {
		const { calls, context } = fakeServices(0);
		setItemAnnouncer(context);
		setItemAnnouncer(null);
		itemsChanged('pseo_generations', [1]);
		await after(400);
		expect(calls).toEqual([]);
	});
});
