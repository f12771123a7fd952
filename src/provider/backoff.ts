/** Exponential backoff bounds, in milliseconds. */
export interface BackoffOptions {
	/** Delay before the second attempt, doubled for each further one. Default 1000. */
	baseMs: number;
	/** Ceiling of any single delay. Default 30000. */
	maxMs: number;
}

export const DEFAULT_BACKOFF: Readonly<BackoffOptions> = Object.freeze({ baseMs: 1000, maxMs: 30_000 });

/** Waits `ms`, or rejects with the signal's reason once it aborts. */
export type Sleep = (ms: number, signal?: AbortSignal) => Promise<void>;

/**
 * The delay after failed attempt `attempt` (1-based): `baseMs·2^(attempt-1)` capped at `maxMs`, then "equal
 * jitter" (between half and all of it) so that many pages failing together do not retry in lockstep.
 */
export function backoffDelay(attempt: number, backoff: BackoffOptions, random: () => number = Math.random): number {
	const exponential = Math.min(backoff.maxMs, backoff.baseMs * 2 ** Math.max(0, attempt - 1));
	return Math.round(exponential / 2 + (random() * exponential) / 2);
}

/**
 * The wait a 429/503 answer asks for, from `retry-after-ms` or `retry-after` (seconds or an HTTP date), capped at
 * `capMs`; null when the headers ask for nothing usable.
 */
export function retryAfterMs(headers: Headers | undefined | null, capMs: number, now: number = Date.now()): number | null {
	if (!headers) return null;
	let wait: number | null = null;
	const ms = headers.get('retry-after-ms');
	if (ms !== null && ms.trim() !== '' && Number.isFinite(Number(ms))) wait = Number(ms);
	if (wait === null) {
		const value = headers.get('retry-after');
		if (value !== null && value.trim() !== '') {
			if (/^\s*\d+(\.\d+)?\s*$/.test(value)) wait = Number(value) * 1000;
			else {
				const date = Date.parse(value);
				if (Number.isFinite(date)) wait = date - now;
			}
		}
	}
	if (wait === null || !Number.isFinite(wait)) return null;
	return Math.round(Math.min(Math.max(0, wait), capMs));
}

/** A real-time sleep that ends early, rejecting, when the signal aborts. */
export const defaultSleep: Sleep = (ms, signal) =>
	new Promise<void>((resolve, reject) => {
		if (signal?.aborted) {
			reject(signal.reason);
			return;
		}
		const onAbort = () => {
			clearTimeout(timer);
			reject(signal?.reason);
		};
		const timer = setTimeout(() => {
			signal?.removeEventListener('abort', onAbort);
			resolve();
		}, ms);
		signal?.addEventListener('abort', onAbort, { once: true });
	});

/** Checks a backoff option, throwing a TypeError that names the bad value. */
export function assertBackoff(value: unknown): asserts value is BackoffOptions {
	if (typeof value !== 'object' || value === null) {
		throw new TypeError(`Expected \`backoff\` to be an object like { baseMs, maxMs }, got \`${String(value)}\``);
	}
	const { baseMs, maxMs } = value as Record<string, unknown>;
	if (typeof baseMs !== 'number' || !Number.isFinite(baseMs) || baseMs < 0) {
		throw new TypeError(`Expected \`backoff.baseMs\` to be a finite number >= 0, got \`${String(baseMs)}\` (${typeof baseMs})`);
	}
	if (typeof maxMs !== 'number' || !Number.isFinite(maxMs) || maxMs < baseMs) {
		throw new TypeError(`Expected \`backoff.maxMs\` to be a finite number >= baseMs (${baseMs}), got \`${String(maxMs)}\` (${typeof maxMs})`);
	}
}
