import { describe, expect, it, vi } from 'vitest';
import { subscribe, watchProgress, webSocketUrl, type SocketLike } from './live-updates.ts';

/** A WebSocket stand-in: records what the module sends, and lets the test play the server's part. */
class FakeSocket implements SocketLike {
	sent: Record<string, unknown>[] = [];
	closed = false;
	#listeners = new Map<string, ((event: { data?: unknown }) => void)[]>();
	addEventListener(type: string, listener: (event: { data?: unknown }) => void) {
		this.#listeners.set(type, [...(this.#listeners.get(type) ?? []), listener]);
	}
	send(data: string) {
		this.sent.push(JSON.parse(data) as Record<string, unknown>);
	}
	close() {
		this.closed = true;
	}
	emit(type: 'open' | 'close' | 'error', data?: unknown) {
		for (const listener of this.#listeners.get(type) ?? []) listener({ data });
	}
	receive(message: Record<string, unknown>) {
		for (const listener of this.#listeners.get('message') ?? []) listener({ data: JSON.stringify(message) });
	}
}

const channel = (socket: FakeSocket) => ({
	url: 'ws://cms.test/websocket',
	collection: 'pseo_generations',
	query: { fields: ['id'], filter: { pseo_id: { _eq: 4 } } },
	createSocket: () => socket,
});

const flush = () => new Promise((resolve) => setTimeout(resolve, 0));

describe('subscribe (Directus WebSocket subscriptions)', () => {
	it('subscribes on open with the query, answers pings, and reports the confirmation and each change', () => {
		const socket = new FakeSocket();
		const events: string[] = [];
		subscribe(channel(socket), { onReady: () => events.push('ready'), onChange: () => events.push('change'), onFailure: () => events.push('failure') });
		socket.emit('open');
		expect(socket.sent).toEqual([{ type: 'subscribe', collection: 'pseo_generations', query: { fields: ['id'], filter: { pseo_id: { _eq: 4 } } }, uid: 'pseo-pseo_generations' }]);
		socket.receive({ type: 'ping' });
		expect(socket.sent.at(-1)).toEqual({ type: 'pong' });
		socket.receive({ type: 'subscription', event: 'init', data: [], uid: 'pseo-pseo_generations' });
		socket.receive({ type: 'subscription', event: 'update', data: [{ id: 1 }], uid: 'pseo-pseo_generations' });
		socket.receive({ type: 'subscription', event: 'create', data: [{ id: 2 }], uid: 'pseo-pseo_generations' });
		socket.receive({ type: 'subscription', event: 'update', data: [{ id: 3 }], uid: 'someone-else' });
		expect(events).toEqual(['ready', 'change', 'change']);
	});

	it('a refused subscription or a lost socket is one failure; close() is none', () => {
		const refused = new FakeSocket();
		const failures = vi.fn();
		subscribe(channel(refused), { onReady: vi.fn(), onChange: vi.fn(), onFailure: failures });
		refused.emit('open');
		refused.receive({ type: 'subscribe', status: 'error', error: { code: 'FORBIDDEN' }, uid: 'pseo-pseo_generations' });
		refused.emit('close');
		expect(failures).toHaveBeenCalledTimes(1);
		expect(refused.closed).toBe(true);

		const ended = new FakeSocket();
		const none = vi.fn();
		subscribe(channel(ended), { onReady: vi.fn(), onChange: vi.fn(), onFailure: none }).close();
		ended.emit('close');
		expect(none).not.toHaveBeenCalled();
	});
});

describe('watchProgress', () => {
	it('over a WebSocket: reads when the subscription stands and once per burst of events, never polls, and stops when done', async () => {
		const socket = new FakeSocket();
		let count = 0;
		let release: () => void = () => undefined;
		const read = vi.fn(async () => {
			count += 1;
			// The second read is held, so that events arriving during it coalesce into one more read.
			if (count === 2) await new Promise<void>((resolve) => (release = resolve));
			return count;
		});
		const seen: number[] = [];
		const watch = watchProgress({ live: channel(socket), read, onData: (value) => seen.push(value), isDone: (value) => value >= 4, key: String, spacingMs: 0 });
		expect(watch.mode).toBe('websocket');
		socket.emit('open');
		await flush();
		expect(read).not.toHaveBeenCalled(); // nothing is read before the subscription stands
		socket.receive({ type: 'subscription', event: 'init', uid: 'pseo-pseo_generations' });
		await flush();
		socket.receive({ type: 'subscription', event: 'update', uid: 'pseo-pseo_generations' });
		await flush();
		socket.receive({ type: 'subscription', event: 'update', uid: 'pseo-pseo_generations' });
		socket.receive({ type: 'subscription', event: 'update', uid: 'pseo-pseo_generations' });
		release();
		await flush();
		await flush();
		expect(seen).toEqual([1, 2, 3]);
		socket.receive({ type: 'subscription', event: 'update', uid: 'pseo-pseo_generations' });
		await flush();
		expect(seen).toEqual([1, 2, 3, 4]);
		expect(socket.closed).toBe(true);
		expect(watch.mode).toBe('websocket');
	});

	it('falls back to polling when the socket fails, and polls from the start without one', async () => {
		const socket = new FakeSocket();
		const modes: string[] = [];
		const read = vi.fn(async () => 1);
		const watch = watchProgress({ live: channel(socket), read, onData: vi.fn(), isDone: () => false, key: String, onMode: (mode) => modes.push(mode), minMs: 5, maxMs: 5 });
		socket.emit('error');
		await flush();
		expect(watch.mode).toBe('polling');
		expect(modes).toEqual(['websocket', 'polling']);
		expect(read).toHaveBeenCalled();
		watch.stop();

		const polled = watchProgress({ live: null, read: async () => 'done', onData: vi.fn(), isDone: () => true, key: String });
		expect(polled.mode).toBe('polling');
	});
});

describe('watchProgress when a read over the socket fails, or events stop', () => {
	it('falls back to polling after a failed read, and reads on its safety interval while no event comes', async () => {
		vi.useFakeTimers();
		try {
			const socket = new FakeSocket();
			let fail = true;
			const read = vi.fn(async () => {
				if (fail) throw new Error('Network Error');
				return 1;
			});
			const errors: unknown[] = [];
			const watch = watchProgress({ live: channel(socket), read, onData: vi.fn(), onError: (error) => errors.push(error), isDone: () => false, key: String, minMs: 5, maxMs: 5, spacingMs: 0 });
			socket.emit('open');
			socket.receive({ type: 'subscription', event: 'init', uid: 'pseo-pseo_generations' });
			await vi.advanceTimersByTimeAsync(0);
			expect(errors[0]).toEqual(new Error('Network Error'));
			expect(watch.mode).toBe('polling');
			expect(socket.closed).toBe(true);
			fail = false;
			const before = read.mock.calls.length;
			await vi.advanceTimersByTimeAsync(30);
			expect(read.mock.calls.length).toBeGreaterThan(before);
			watch.stop();

			const quiet = new FakeSocket();
			const reads = vi.fn(async () => 1);
			const safe = watchProgress({ live: channel(quiet), read: reads, onData: vi.fn(), isDone: () => false, key: String, safetyMs: 10, spacingMs: 0 });
			await vi.advanceTimersByTimeAsync(9);
			expect(reads).not.toHaveBeenCalled();
			await vi.advanceTimersByTimeAsync(21);
			expect(reads).toHaveBeenCalledTimes(3);
			expect(safe.mode).toBe('websocket');
			safe.stop();
		} finally {
			vi.useRealTimers();
		}
	});
});

describe('watchProgress spacing', () => {
	it('answers a burst of events with one read, no sooner than the spacing after the previous one', async () => {
		const socket = new FakeSocket();
		const times: number[] = [];
		const read = vi.fn(async () => {
			times.push(Date.now());
			return times.length;
		});
		vi.useFakeTimers();
		try {
			const watch = watchProgress({ live: channel(socket), read, onData: vi.fn(), isDone: () => false, key: String, spacingMs: 60 });
			socket.emit('open');
			socket.receive({ type: 'subscription', event: 'init', uid: 'pseo-pseo_generations' });
			await vi.advanceTimersByTimeAsync(0);
			for (let i = 0; i < 5; i++) socket.receive({ type: 'subscription', event: 'update', uid: 'pseo-pseo_generations' });
			await vi.advanceTimersByTimeAsync(59);
			expect(read).toHaveBeenCalledTimes(1);
			await vi.advanceTimersByTimeAsync(1);
			expect(read).toHaveBeenCalledTimes(2);
			expect(times[1]! - times[0]!).toBe(60);
			await vi.advanceTimersByTimeAsync(500);
			expect(read).toHaveBeenCalledTimes(2);
			watch.stop();
		} finally {
			vi.useRealTimers();
		}
	});
});

describe('webSocketUrl', () => {
	it('follows the app\'s address, path prefix and scheme', () => {
		expect(webSocketUrl('/', '/websocket', { href: 'http://localhost:8055/admin/pseo-workspace' })).toBe('ws://localhost:8055/websocket');
		expect(webSocketUrl('/cms/', '/websocket', { href: 'https://example.com/cms/admin/x' })).toBe('wss://example.com/cms/websocket');
	});
});
