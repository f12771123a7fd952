import { startPoller, type PollerOptions } from './poller.ts';

/*
 * Live progress for the module's jobs and publications. Where Directus has WebSockets enabled, the module subscribes
 * to the collection through Directus's own subscription protocol (the extension emits `items.update` after each
 * progress write, shared/item-events.ts) and reads the record again when an event arrives: no request goes out while
 * nothing moves. Elsewhere, or when the socket fails or closes, it polls with backoff (poller.ts), which also stops
 * while the page is hidden.
 *
 * The socket authenticates with the app's session cookie at the upgrade, as the app's own connections do, and Directus
 * reads each event's item back with the subscriber's permissions, so an editor never hears of another's jobs.
 */

/** The part of the browser's WebSocket this module uses (a stand-in in the component tests). */
export interface SocketLike {
	send(data: string): void;
	close(): void;
	addEventListener(type: 'open' | 'message' | 'close' | 'error', listener: (event: { data?: unknown }) => void): void;
}

export interface LiveChannel {
	/** ws:// or wss:// address of Directus's WebSocket endpoint. */
	url: string;
	collection: string;
	/** The subscription's query: its filter narrows the events to the records on screen. */
	query: Record<string, unknown>;
	createSocket?: (url: string) => SocketLike;
}

export interface Subscription {
	close(): void;
}

/**
 * Subscribes to create and update events of a collection. `onReady` runs once Directus confirms the subscription,
 * `onChange` on each event after that, and `onFailure` once if the subscription is refused or the socket fails or
 * closes; `close()` ends it without calling `onFailure`.
 */
export function subscribe(channel: LiveChannel, handlers: { onReady: () => void; onChange: () => void; onFailure: () => void }): Subscription {
	const uid = `pseo-${channel.collection}`;
	let closed = false;
	let socket: SocketLike;
	const fail = () => {
		if (closed) return;
		closed = true;
		try {
			socket?.close();
		} catch {
			// already closed
		}
		handlers.onFailure();
	};
	try {
		socket = (channel.createSocket ?? ((url) => new WebSocket(url) as unknown as SocketLike))(channel.url);
	} catch {
		queueMicrotask(fail);
		return { close: () => (closed = true) };
	}
	socket.addEventListener('open', () => {
		socket.send(JSON.stringify({ type: 'subscribe', collection: channel.collection, query: channel.query, uid }));
	});
	socket.addEventListener('message', (event) => {
		if (closed) return;
		const message = parse(event.data);
		if (!message) return;
		// Directus's heartbeat closes a connection that does not answer its pings.
		if (message['type'] === 'ping') return socket.send(JSON.stringify({ type: 'pong' }));
		if (message['status'] === 'error') return fail();
		if (message['type'] !== 'subscription' || message['uid'] !== uid) return;
		if (message['event'] === 'init') handlers.onReady();
		else if (message['event'] === 'create' || message['event'] === 'update') handlers.onChange();
	});
	socket.addEventListener('error', fail);
	socket.addEventListener('close', fail);
	return {
		close() {
			if (closed) return;
			closed = true;
			socket.close();
		},
	};
}

function parse(data: unknown): Record<string, unknown> | null {
	if (typeof data !== 'string') return null;
	try {
		const value = JSON.parse(data) as unknown;
		return value && typeof value === 'object' ? (value as Record<string, unknown>) : null;
	} catch {
		return null;
	}
}

export type LiveMode = 'websocket' | 'polling';

export interface WatchOptions<T> extends PollerOptions<T> {
	/** The subscription to use when Directus has WebSockets enabled; null to poll. */
	live: LiveChannel | null;
	onMode?: (mode: LiveMode) => void;
	/**
	 * Over the subscription, a read this often anyway (default 20 s): an announcement that never came (a deployment
	 * whose instances share no bus, a write whose announcement failed) delays the screen, never freezes it.
	 */
	safetyMs?: number;
	/**
	 * Over the subscription, the least time between two reads (default 1 s): an ingest announces a change up to four
	 * times a second, and the events of that second are answered with one read.
	 */
	spacingMs?: number;
}

export interface Watch {
	stop(): void;
	readonly mode: LiveMode;
}

/**
 * Keeps `onData` fed with `read()` until `isDone`: through the subscription when there is one (a read when it is
 * confirmed, then one per burst of events, and a slow safety read), through the poller otherwise, or once the
 * subscription fails or a read over it does.
 */
export function watchProgress<T>(options: WatchOptions<T>): Watch {
	let mode: LiveMode = options.live ? 'websocket' : 'polling';
	let stopped = false;
	let poller: ReturnType<typeof startPoller> | null = null;
	let subscription: Subscription | null = null;
	let reading = false;
	let again = false;
	let safety: ReturnType<typeof setInterval> | null = null;
	let lastRead = 0;
	const spacingMs = options.spacingMs ?? 1000;

	const setMode = (next: LiveMode) => {
		mode = next;
		options.onMode?.(next);
	};

	const stop = () => {
		stopped = true;
		subscription?.close();
		poller?.stop();
		if (safety) clearInterval(safety);
	};

	const poll = () => {
		if (stopped) return;
		subscription?.close();
		subscription = null;
		if (safety) clearInterval(safety);
		safety = null;
		setMode('polling');
		poller = startPoller({ ...options, isDone: (value) => options.isDone(value) && (stop(), true) });
	};

	// One read at a time, at most one per spacing: events that arrive meanwhile give exactly one more read after it.
	const read = async () => {
		if (reading) {
			again = true;
			return;
		}
		reading = true;
		try {
			do {
				const wait = lastRead + spacingMs - Date.now();
				if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
				if (stopped) return;
				// Events that came while waiting are answered by this read.
				again = false;
				lastRead = Date.now();
				const value = await options.read();
				if (stopped) return;
				options.onData(value);
				if (options.isDone(value)) return stop();
			} while (again && !stopped);
		} catch (error) {
			options.onError?.(error);
			// The poller retries with backoff; the subscription would wait for the next event, which may never come.
			poll();
		} finally {
			reading = false;
		}
	};

	if (!options.live) {
		poll();
	} else {
		setMode('websocket');
		subscription = subscribe(options.live, {
			// Read once the subscription stands, so that no change between the read and the subscription is missed.
			onReady: () => void read(),
			onChange: () => void read(),
			onFailure: () => {
				subscription = null;
				poll();
			},
		});
		safety = setInterval(() => void read(), options.safetyMs ?? 20_000);
	}
	return {
		stop,
		get mode() {
			return mode;
		},
	};
}

/** The ws:// or wss:// address of Directus's WebSocket endpoint, from the app's API base and the server's path. */
export function webSocketUrl(apiBase: string, path: string, location: { href: string }): string {
	const url = new URL(apiBase.replace(/\/?$/, '/') + path.replace(/^\//, ''), location.href);
	url.protocol = url.protocol === 'https:' ? 'wss:' : 'ws:';
	return url.toString();
}
