/*
 * Polling with backoff for live progress where no WebSocket subscription is available: the interval starts short,
 * grows while nothing changes, comes back down when something does, and stops while the page is hidden (a hidden tab
 * costs the server nothing) and for good once `stop()` is called or `isDone` says the job will not move again.
 */

/** What the poller needs of `document`: whether the page is hidden, and its visibilitychange event. */
interface VisibilitySource {
	hidden: boolean;
	addEventListener(type: 'visibilitychange', listener: () => void): void;
	removeEventListener(type: 'visibilitychange', listener: () => void): void;
}

export interface PollerOptions<T> {
	read: () => Promise<T>;
	onData: (value: T) => void;
	onError?: (error: unknown) => void;
	isDone: (value: T) => boolean;
	/** A fingerprint of a value: polling speeds up again when it changes. */
	key: (value: T) => string;
	minMs?: number;
	maxMs?: number;
	/** The page's visibility (document in the app; a stand-in in tests). */
	visibility?: VisibilitySource;
	schedule?: (callback: () => void, ms: number) => unknown;
	cancel?: (handle: unknown) => void;
}

export interface Poller {
	stop(): void;
	/** The wait before the next read, for tests and the UI. */
	readonly delay: number;
	readonly running: boolean;
}

export function startPoller<T>(options: PollerOptions<T>): Poller {
	const minMs = options.minMs ?? 1000;
	const maxMs = options.maxMs ?? 15_000;
	const schedule = options.schedule ?? ((callback, ms) => setTimeout(callback, ms));
	const cancel = options.cancel ?? ((handle) => clearTimeout(handle as ReturnType<typeof setTimeout>));
	const visibility = options.visibility ?? (globalThis as { document?: VisibilitySource }).document;
	let delay = minMs;
	let lastKey: string | null = null;
	let handle: unknown = null;
	let stopped = false;
	let inFlight = false;

	const tick = async () => {
		handle = null;
		if (stopped || inFlight) return;
		if (visibility?.hidden) return; // resumed by the visibility listener
		inFlight = true;
		try {
			const value = await options.read();
			if (stopped) return;
			options.onData(value);
			if (options.isDone(value)) {
				stop();
				return;
			}
			const key = options.key(value);
			delay = key === lastKey ? Math.min(maxMs, Math.round(delay * 1.5)) : minMs;
			lastKey = key;
		} catch (error) {
			delay = Math.min(maxMs, delay * 2);
			options.onError?.(error);
		} finally {
			inFlight = false;
		}
		if (!stopped) handle = schedule(tick, delay);
	};

	const onVisibility = () => {
		if (stopped || visibility?.hidden) return;
		// Back in view: read at once instead of finishing a long wait.
		if (handle !== null) cancel(handle);
		delay = minMs;
		void tick();
	};

	function stop() {
		stopped = true;
		if (handle !== null) cancel(handle);
		handle = null;
		visibility?.removeEventListener('visibilitychange', onVisibility);
	}

	visibility?.addEventListener('visibilitychange', onVisibility);
	void tick();
	return {
		stop,
		get delay() {
			return delay;
		},
		get running() {
			return !stopped;
		},
	};
}
