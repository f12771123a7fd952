import { describe, expect, it } from 'vitest';
import { coalesceWrites } from './page-runner.ts';

/** A write whose calls stay pending until released, recording what each call carried. */
function gatedWrite() {
	const calls: number[][] = [];
	const gates: { release: () => void; fail: (error: Error) => void }[] = [];
	const write = (items: number[]) =>
		new Promise<void>((resolve, reject) => {
			calls.push(items);
			gates.push({ release: resolve, fail: reject });
		});
	return { calls, gates, write };
}

const tick = () => new Promise((resolve) => setImmediate(resolve));

describe('coalesceWrites', () => {
	it('writes a lone item at once, in its own call', async () => {
		const { calls, gates, write } = gatedWrite();
		const store = coalesceWrites(write);
		const stored = store(1);
		await tick();
		expect(calls).toEqual([[1]]);
		gates[0]!.release();
		await expect(stored).resolves.toBeUndefined();
	});

	it('merges the items that arrive while a write runs into the next call, in arrival order', async () => {
		const { calls, gates, write } = gatedWrite();
		const store = coalesceWrites(write);
		const first = store(1);
		await tick();
		const later = [store(2), store(3), store(4)];
		await tick();
		expect(calls).toEqual([[1]]);
		gates[0]!.release();
		await first;
		await tick();
		expect(calls).toEqual([[1], [2, 3, 4]]);
		gates[1]!.release();
		await Promise.all(later);
	});

	it('never carries more than max items in one call', async () => {
		const { calls, gates, write } = gatedWrite();
		const store = coalesceWrites(write, 2);
		const all = [store(1)];
		await tick();
		all.push(store(2), store(3), store(4), store(5), store(6));
		for (let call = 0; call < 4; call++) {
			await tick();
			gates[call]?.release();
		}
		await Promise.all(all);
		expect(calls).toEqual([[1], [2, 3], [4, 5], [6]]);
	});

	it('rejects the items of a failed call with its error and still writes the items after them', async () => {
		const { calls, gates, write } = gatedWrite();
		const store = coalesceWrites(write);
		const first = store(1);
		await tick();
		const second = store(2);
		const lost = new Error('lease lost');
		gates[0]!.fail(lost);
		await expect(first).rejects.toBe(lost);
		await tick();
		expect(calls).toEqual([[1], [2]]);
		gates[1]!.release();
		await expect(second).resolves.toBeUndefined();
	});

	it('rejects a max that is not a positive integer, naming it', () => {
		expect(() => coalesceWrites(async () => {}, 0)).toThrow(new TypeError('Expected `max` to be a positive integer, got 0'));
		expect(() => coalesceWrites(async () => {}, 1.5)).toThrow(TypeError);
	});
});
