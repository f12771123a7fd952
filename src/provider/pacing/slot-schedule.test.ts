import { describe, expect, it } from 'vitest';
import { cadenceOf, cutRate, EMPTY_STATE, LEARNT_RATE_TTL_MS, learntRateAt, reserveSlot, type SlotDemand, type SlotState } from './slot-schedule.ts';

const T0 = 1_000_000;
const FOUR_A_SECOND: SlotDemand = { requests: cadenceOf(4, 1000), tokens: null, tokenCount: 0 };

/** The times `count` calls arriving at `now` get, one after another. */
function slots(count: number, demand: SlotDemand, now = T0, state: SlotState = { ...EMPTY_STATE }): { times: number[]; state: SlotState } {
	const times: number[] = [];
	for (let i = 0; i < count; i++) {
		const slot = reserveSlot(state, demand, now, Number.POSITIVE_INFINITY);
		times.push(slot.at - now);
		state = slot.state!;
	}
	return { times, state };
}

describe('cadenceOf', () => {
	it('spends the window over the limit, with a burst of 90 % of a second at most', () => {
		expect(cadenceOf(4, 1000)).toEqual({ unitMs: 250, horizonMs: 900 });
		expect(cadenceOf(3000, 60_000)).toEqual({ unitMs: 20, horizonMs: 900 });
		// A limit slower than one a second has no burst: one unit at a time.
		expect(cadenceOf(50, 60_000)).toEqual({ unitMs: 1200, horizonMs: 1200 });
	});
});

describe('reserveSlot', () => {
	it('lets a burst go at once, then spaces the calls by the limit', () => {
		expect(slots(8, FOUR_A_SECOND).times).toEqual([0, 0, 0, 100, 350, 600, 850, 1100]);
	});

	it('paces to the provider\'s rate over a long run: 40 calls of a 4-a-second limit take 9.1 s', () => {
		const { times } = slots(40, FOUR_A_SECOND);
		expect(times.at(-1)).toBe(9100);
	});

	it('gives the whole budget back after a pause', () => {
		const first = slots(8, FOUR_A_SECOND);
		const later = slots(3, FOUR_A_SECOND, T0 + 10_000, first.state);
		expect(later.times).toEqual([0, 0, 0]);
	});

	it('paces by tokens as well: a call of 2,000 tokens under 60,000 a minute takes 2 s of the budget', () => {
		const demand: SlotDemand = { requests: null, tokens: cadenceOf(60_000, 60_000), tokenCount: 2000 };
		// Dearer than the whole burst: each goes once the schedule has caught up with now.
		expect(slots(3, demand).times).toEqual([0, 2000, 4000]);
	});

	it('waits for the later of the two limits', () => {
		const demand: SlotDemand = { requests: cadenceOf(4, 1000), tokens: cadenceOf(1000, 1000), tokenCount: 500 };
		expect(slots(4, demand).times).toEqual([0, 100, 600, 1100]);
	});

	it('holds every call until the hold a 429 set', () => {
		const { times } = slots(2, FOUR_A_SECOND, T0, { ...EMPTY_STATE, holdUntil: T0 + 5000 });
		expect(times).toEqual([5000, 5000]);
	});

	it('refuses a slot later than the deadline, and takes nothing then', () => {
		const { state } = slots(8, FOUR_A_SECOND);
		const refused = reserveSlot(state, FOUR_A_SECOND, T0, T0 + 1000);
		expect(refused).toEqual({ at: T0 + 1350, state: null });
		expect(reserveSlot(state, FOUR_A_SECOND, T0, T0 + 1350).state).not.toBeNull();
	});

	it('leaves a dimension without a limit untouched', () => {
		const { state } = slots(3, FOUR_A_SECOND);
		expect(state.tokenTat).toBe(0);
	});
});

describe('learnt rates (AIMD)', () => {
	it('starts at half the rate the instance was seen at, and doubles every 2 s until the next 429', () => {
		const first = cutRate(null, { at: T0, rate: null }, 8, T0)!;
		expect(first).toEqual({ rate: 4, since: T0, phase: 'start' });
		expect(learntRateAt(first, T0 + 2000)).toBeCloseTo(8);
	});

	it('cuts to 80 % of the rate the refused call went at, then grows by 5 % a second', () => {
		const start = { rate: 4, since: T0, phase: 'start' as const };
		const cut = cutRate(start, { at: T0 + 2000, rate: null }, 99, T0 + 2100)!;
		expect(cut.phase).toBe('steady');
		expect(cut.rate).toBeCloseTo(6.4);
		expect(learntRateAt(cut, T0 + 4100)).toBeCloseTo(6.4 * 1.1);
	});

	it('cuts a known limit a call was paced to, to 80 %, without a slow start', () => {
		expect(cutRate(null, { at: T0, rate: 4 }, 99, T0 + 5)).toEqual({ rate: 3.2, since: T0 + 5, phase: 'steady' });
		// The slower of the two when a learnt rate is in force too.
		expect(cutRate({ rate: 2, since: T0 - 10, phase: 'steady' }, { at: T0, rate: 4 }, 99, T0 + 5)?.rate).toBeCloseTo(1.6, 2);
	});

	it('ignores a 429 of a call that went before the last cut', () => {
		const learnt = { rate: 4, since: T0, phase: 'steady' as const };
		expect(cutRate(learnt, { at: T0 - 1, rate: 4 }, 99, T0 + 10)).toBeNull();
	});

	it('forgets a rate after ten minutes without a 429', () => {
		const learnt = { rate: 4, since: T0, phase: 'steady' as const };
		expect(learntRateAt(learnt, T0 + LEARNT_RATE_TTL_MS + 1)).toBeNull();
		expect(cutRate(learnt, { at: T0 + LEARNT_RATE_TTL_MS + 1, rate: null }, 2, T0 + LEARNT_RATE_TTL_MS + 2)?.phase).toBe('start');
	});

	it('starts at one call a second at least, and never goes below one call every 10 s', () => {
		expect(cutRate(null, { at: T0, rate: null }, 0.5, T0)?.rate).toBe(1);
		expect(cutRate(null, { at: T0, rate: 0.11 }, 99, T0)?.rate).toBe(0.1);
	});
});
