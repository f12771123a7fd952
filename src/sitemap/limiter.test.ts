import { describe, expect, it } from 'vitest';
import { createLimiter } from './limiter.ts';

describe('createLimiter', () => {
	it('never runs more than `concurrency` tasks at once, nested or not', async () => {
		const limiter = createLimiter(3);
		let running = 0;
		let peak = 0;
		const task = async (): Promise<void> => {
			running++;
			peak = Math.max(peak, running);
			await new Promise((resolve) => setTimeout(resolve, 2));
			running--;
		};
		await Promise.all(Array.from({ length: 20 }, () => limiter.run(task).then(() => limiter.run(task))));
		expect(peak).toBe(3);
		expect(limiter.active).toBe(0);
		expect(limiter.pending).toBe(0);
	});

	it('starts waiting tasks in arrival order and frees the slot of a failed task', async () => {
		const limiter = createLimiter(1);
		const order: number[] = [];
		const failing = limiter.run(async () => {
			throw new Error('boom');
		});
		const rest = [1, 2, 3].map((n) => limiter.run(async () => void order.push(n)));
		await expect(failing).rejects.toThrow('boom');
		await Promise.all(rest);
		expect(order).toEqual([1, 2, 3]);
	});

	it('rejects a bad concurrency with a TypeError naming the value', () => {
		expect(() => createLimiter(0)).toThrow(/received 0/);
		expect(() => createLimiter(1.5)).toThrow(TypeError);
	});
});
