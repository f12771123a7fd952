/** Runs at most `concurrency` tasks at once; the rest wait in arrival order. */
export interface Limiter {
	run<T>(task: () => Promise<T>): Promise<T>;
	/** Tasks running now. */
	readonly active: number;
	/** Tasks waiting for a slot. */
	readonly pending: number;
}

/** One pool for a whole call, so that nested index levels never multiply the number of requests in flight. */
export function createLimiter(concurrency: number): Limiter {
	if (!Number.isSafeInteger(concurrency) || concurrency < 1) {
		throw new TypeError(`concurrency must be a positive integer, received ${JSON.stringify(concurrency)}`);
	}
	let active = 0;
	const waiting: (() => void)[] = [];
	const release = (): void => {
		const next = waiting.shift();
		// The slot passes straight to the next waiter, so a newcomer cannot take it in between.
		if (next) next();
		else active--;
	};
	return {
		async run<T>(task: () => Promise<T>): Promise<T> {
			if (active < concurrency) active++;
			else await new Promise<void>((resolve) => waiting.push(resolve));
			try {
				return await task();
			} finally {
				release();
			}
		},
		get active() {
			return active;
		},
		get pending() {
			return waiting.length;
		},
	};
}
