import { EMPTY_STATE, reserveSlot, type LearntRate, type SlotDemand, type SlotState } from './slot-schedule.ts';

/** A key's shared state as a store reads it: when calls may go again, and the rate learnt from 429s. */
export interface SharedPace {
	holdUntil: number;
	learnt: LearntRate | null;
}

/**
 * Where the instances that share a provider key keep its schedule (slot-schedule.ts): Redis when Directus has it,
 * else the database; in memory for a single process (tests, and while the shared store fails). Keys are opaque ids
 * (pacer-key.ts), never an API key. Times are milliseconds since the epoch, by each instance's clock.
 */
export interface PacingStore {
	/**
	 * The next slot of `key`: when a call may go, taken when that is no later than `notAfter` (a reservation is made
	 * for a slot near enough, not for one far ahead), with the key's shared state as it was read.
	 */
	reserve(key: string, demand: SlotDemand, now: number, notAfter: number): Promise<{ at: number; taken: boolean; shared: SharedPace }>;
	/**
	 * No call of `key` goes before `until` (a 429's wait), unless a later hold is already set; with `requestTat`, the
	 * request schedule is moved on to it at least, so that no burst follows the hold (the provider's bucket is empty).
	 */
	hold(key: string, until: number, requestTat?: number): Promise<void>;
	/** The key's shared state. */
	read(key: string): Promise<SharedPace>;
	/**
	 * Replaces the learnt rate of `key` by `next` when it still is `expected` (compared by `since`; null for none):
	 * resolves to the rate in force afterwards, `next` or what another instance set first.
	 */
	learn(key: string, expected: LearntRate | null, next: LearntRate): Promise<LearntRate | null>;
}

interface Entry extends SlotState {
	learnt: LearntRate | null;
}

/** A store in this process's memory: the pacing of one instance alone. */
export function createMemoryPacingStore(): PacingStore {
	const entries = new Map<string, Entry>();
	const entry = (key: string): Entry => {
		let found = entries.get(key);
		if (!found) {
			found = { ...EMPTY_STATE, learnt: null };
			entries.set(key, found);
		}
		return found;
	};
	const shared = (found: Entry): SharedPace => ({ holdUntil: found.holdUntil, learnt: found.learnt });
	return {
		async reserve(key, demand, now, notAfter) {
			const found = entry(key);
			const slot = reserveSlot(found, demand, now, notAfter);
			if (slot.state) Object.assign(found, slot.state);
			return { at: slot.at, taken: slot.state !== null, shared: shared(found) };
		},
		async hold(key, until, requestTat) {
			const found = entry(key);
			found.holdUntil = Math.max(found.holdUntil, until);
			if (requestTat !== undefined) found.requestTat = Math.max(found.requestTat, requestTat);
		},
		async read(key) {
			return shared(entry(key));
		},
		async learn(key, expected, next) {
			const found = entry(key);
			if ((found.learnt?.since ?? null) === (expected?.since ?? null)) found.learnt = next;
			return found.learnt;
		},
	};
}
