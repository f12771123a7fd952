import { describe, expect, it } from 'vitest';
import { createStatisticsSchedule } from './table-statistics.ts';

describe('createStatisticsSchedule', () => {
	it('refreshes after the first rows, then each time the rows added have doubled', () => {
		const schedule = createStatisticsSchedule(1000);
		const due: number[] = [];
		let total = 0;
		for (let i = 0; i < 64; i++) {
			total += 250;
			if (schedule.add(250)) due.push(total);
		}
		expect(due).toEqual([1000, 2000, 4000, 8000, 16000]);
	});

	it('counts a large addition at once and never refreshes twice for the same rows', () => {
		const schedule = createStatisticsSchedule(1000);
		expect(schedule.add(999)).toBe(false);
		expect(schedule.add(5000)).toBe(true);
		expect(schedule.add(5000)).toBe(false);
		expect(schedule.add(2000)).toBe(true);
	});

	it('goes on from the rows a run added before', () => {
		const schedule = createStatisticsSchedule(1000, 40_000);
		expect(schedule.add(39_999)).toBe(false);
		expect(schedule.add(1)).toBe(true);
		expect(schedule.add(1)).toBe(false);
		expect(createStatisticsSchedule(1000, 300).add(700)).toBe(true);
	});
});
