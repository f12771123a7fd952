import { providerPaceWait, providerPacedCalls } from '../../metrics/metrics.ts';
import type { Logger } from '../../shared/logger.ts';
import type { ProviderKind } from '../../shared/provider-kinds.ts';
import type { Sleep } from '../backoff.ts';
import { createMemoryPacingStore, type PacingStore, type SharedPace } from './pacing-store.ts';
import { readRateLimitHeaders, type HeaderLimit } from './rate-limit-headers.ts';
import { cadenceOf, cutRate, learntRateAt, type Cadence, type SlotDemand } from './slot-schedule.ts';

/** Limits an administrator set for every key (PSEO_PROVIDER_RPM, PSEO_PROVIDER_TPM); null where none is set. */
export interface ConfiguredLimits {
	requestsPerMinute: number | null;
	tokensPerMinute: number | null;
}

export interface PacerOptions {
	/** The key's id (pacer-key.ts). */
	key: string;
	/** The provider kind, the one label of the pacing metrics. */
	provider: ProviderKind;
	/** Limits that win over what the provider's headers say. */
	configured: ConfiguredLimits;
	/** Where the slots of every instance are taken. */
	store: PacingStore;
	logger: Logger;
	/** Waits until a slot comes; rejects when the signal aborts. */
	sleep: Sleep;
	/** Milliseconds since the epoch. Default `Date.now`. */
	now?: () => number;
}

/** The slot a call went in: when, how long it waited for it, and the rate it was paced to (null: unpaced). */
export interface PaceSlot {
	sentAt: number;
	waitedMs: number;
	/** Requests per second. */
	rate: number | null;
}

/** One provider key's pacing as this instance sees it: every online call of the key takes a slot from it first. */
export interface Pacer {
	readonly provider: ProviderKind;
	/**
	 * Waits for the next slot of the key for a call of `tokens` estimated input tokens, for at most `maxWaitMs`:
	 * resolves to the slot, or to null, at once, when the slot would come later than that (nothing is taken then).
	 * Rejects with the signal's reason when it aborts.
	 */
	acquire(request: { tokens: number; maxWaitMs: number; signal?: AbortSignal | undefined }): Promise<PaceSlot | null>;
	/** Learns the key's limits from an answer's headers. */
	observe(headers: Headers | null | undefined): void;
	/** A call that went in `slot` was answered 429: holds the key for the wait the provider asked for, and slows down. */
	rateLimited(slot: PaceSlot, retryAfterMs: number | null, headers?: Headers | null): Promise<void>;
}

/** How long an unpaced key's shared state is trusted before it is read again. */
const SHARED_READ_MS = 1000;
/** Window estimates kept per limit; the longest is used (see WindowEstimate). */
const WINDOW_SAMPLES = 16;
/** What the vendors document their limits over: a minute. */
const MINUTE_MS = 60_000;
/** The span over which this instance's own rate of calls is measured, for the first cut of an unpaced key. */
const OBSERVED_SPAN_MS = 2000;
/**
 * How far ahead a slot is taken. A slot taken is kept at the pace of the moment it was taken: were calls to take
 * slots seconds ahead, a pace cut by a 429 (or raised after one) would take effect only seconds later.
 */
const LOOKAHEAD_MS = 200;
/** The longest the calls of a key wait for its first answer before they go anyway. */
const DISCOVERY_MS = 5000;
/** A store failure is logged at most this often per key. */
const STORE_WARN_MS = 60_000;

/**
 * The window of a limit the headers state. The vendors document per-minute limits, but a bucket is refilled
 * continuously, so its window follows from any answer: `reset · limit / (limit - remaining)`, the time until the
 * budget is whole divided by the share of it in use. `remaining` is rounded down by the providers, which only ever
 * shortens an estimate, so the longest of the recent ones is kept; a minute is assumed until one is made, and no
 * estimate goes beyond it.
 */
class WindowEstimate {
	#samples: number[] = [];

	observe(limit: HeaderLimit): void {
		const { remaining, resetMs } = limit;
		if (remaining === null || resetMs === null || resetMs <= 0 || remaining >= limit.limit) return;
		const estimate = (resetMs * limit.limit) / (limit.limit - remaining);
		if (!Number.isFinite(estimate)) return;
		this.#samples.push(Math.min(MINUTE_MS, Math.max(10, estimate)));
		if (this.#samples.length > WINDOW_SAMPLES) this.#samples.shift();
	}

	get ms(): number {
		return this.#samples.length === 0 ? MINUTE_MS : Math.max(...this.#samples);
	}
}

interface Learnt {
	limit: number;
	window: WindowEstimate;
}

/**
 * A pacer of one key: the limit in force is PSEO_PROVIDER_RPM / PSEO_PROVIDER_TPM when set, else what the provider's
 * headers said last, and in either case no faster than the rate learnt from 429s (slot-schedule.ts, AIMD). A key
 * with no limit known goes unpaced, checking only the hold a 429 set, until its first 429. Slots come from the
 * shared store; when the store fails, from this process's memory, so that a Redis or database outage slows nothing
 * down beyond this instance's own pacing.
 */
export function createPacer(options: PacerOptions): Pacer {
	const { key, provider, configured, store, logger, sleep } = options;
	const now = options.now ?? Date.now;
	const fallback = createMemoryPacingStore();
	const learnt: { requests: Learnt | null; tokens: Learnt | null } = { requests: null, tokens: null };
	let shared: SharedPace = { holdUntil: 0, learnt: null };
	let sharedReadAt = Number.NEGATIVE_INFINITY;
	/** Start times of this instance's recent calls, for the first cut of an unpaced key. */
	const recent: number[] = [];
	let lastStoreWarning = Number.NEGATIVE_INFINITY;
	/** Reservations of this instance go to the store one at a time: their order is the order of the calls. */
	let queue: Promise<unknown> = Promise.resolve();
	/**
	 * Until the key's first answer, its first call goes alone and the others wait for that answer (at most
	 * DISCOVERY_MS): its headers may state the limit, which a burst of PSEO_CONCURRENCY calls would meet as 429s.
	 */
	let discovery: { done: Promise<void>; finish: () => void } | null = null;
	let answered = false;

	const guarded = async <T>(what: string, work: (target: PacingStore) => Promise<T>): Promise<T> => {
		try {
			return await work(store);
		} catch (error) {
			if (now() - lastStoreWarning > STORE_WARN_MS) {
				lastStoreWarning = now();
				logger.warn({ err: error, provider, pacer: key, op: what }, 'pseo-automation: the shared pacing store failed; this instance paces alone meanwhile');
			}
			return work(fallback);
		}
	};

	const cadence = (perMinute: number | null, found: Learnt | null): Cadence | null => {
		if (perMinute !== null) return cadenceOf(perMinute, MINUTE_MS);
		return found ? cadenceOf(found.limit, found.window.ms) : null;
	};

	const demandAt = (at: number, tokens: number): SlotDemand => {
		let requests = cadence(configured.requestsPerMinute, learnt.requests);
		const rate = learntRateAt(shared.learnt, at);
		if (rate !== null) {
			const cut = cadenceOf(rate, 1000);
			if (!requests || cut.unitMs > requests.unitMs) requests = cut;
		}
		return { requests, tokens: cadence(configured.tokensPerMinute, learnt.tokens), tokenCount: tokens };
	};

	const noteCall = (at: number) => {
		recent.push(at);
		while (recent.length > 0 && recent[0]! < at - OBSERVED_SPAN_MS) recent.shift();
	};

	const reserve = (demand: SlotDemand, start: number, notAfter: number) => {
		const next = queue.then(() => guarded('reserve', (target) => target.reserve(key, demand, start, notAfter)));
		queue = next.catch(() => {});
		return next;
	};

	const refreshShared = async (at: number) => {
		if (at - sharedReadAt < SHARED_READ_MS) return;
		sharedReadAt = at;
		shared = await guarded('read', (target) => target.read(key));
	};

	const hold = async (until: number, requestTat?: number) => {
		shared = { ...shared, holdUntil: Math.max(shared.holdUntil, until) };
		await guarded('hold', (target) => target.hold(key, until, requestTat));
	};

	const settleDiscovery = () => {
		answered = true;
		discovery?.finish();
	};

	/** Waits for the key's first answer when no limit is known yet; the first caller is the one that goes. */
	const discover = async (signal: AbortSignal | undefined) => {
		if (answered || configured.requestsPerMinute !== null || configured.tokensPerMinute !== null) return;
		if (!discovery) {
			let finish = () => {};
			const done = new Promise<void>((resolve) => (finish = resolve));
			discovery = { done, finish };
			return;
		}
		let timer: NodeJS.Timeout | undefined;
		let onAbort = () => {};
		try {
			await Promise.race([
				discovery.done,
				new Promise<void>((resolve) => (timer = setTimeout(resolve, DISCOVERY_MS))),
				new Promise<never>((_, reject) => {
					onAbort = () => reject(signal?.reason);
					if (signal?.aborted) onAbort();
					else signal?.addEventListener('abort', onAbort, { once: true });
				}),
			]);
		} finally {
			clearTimeout(timer);
			signal?.removeEventListener('abort', onAbort);
		}
	};

	const observe = (headers: Headers | null | undefined) => {
		settleDiscovery();
		const at = now();
		const limits = readRateLimitHeaders(headers, at);
		if (!limits) return;
		for (const dimension of ['requests', 'tokens'] as const) {
			const stated = limits[dimension];
			if (!stated) continue;
			const known = (learnt[dimension] ??= { limit: stated.limit, window: new WindowEstimate() });
			known.limit = stated.limit;
			known.window.observe(stated);
			// Another client of the key may have used it up: nothing more goes until one unit is back.
			if (stated.remaining === 0 && stated.resetMs !== null) void hold(at + Math.min(stated.resetMs, known.window.ms / stated.limit));
		}
	};

	/** Cuts the rate learnt from 429s, after a 429 of a call that went in `slot` (slot-schedule.ts's cutRate). */
	const slowDown = async (slot: PaceSlot, at: number) => {
		// A call that went before the limit was known (the first calls of a key, on each instance) says nothing the
		// limit does not: it is not paced slower for it.
		if (slot.rate === null && demandAt(at, 0).requests) return;
		const observed = recent.filter((start) => start > at - OBSERVED_SPAN_MS).length / (OBSERVED_SPAN_MS / 1000);
		const next = cutRate(shared.learnt, { at: slot.sentAt, rate: slot.rate }, observed, at);
		if (!next) return;
		const expected = shared.learnt;
		const inForce = await guarded('learn', (target) => target.learn(key, expected, next));
		shared = { ...shared, learnt: inForce };
		logger.info({ provider, pacer: key, requestsPerSecond: Number(learntRateAt(inForce, at)?.toFixed(3)) }, 'pseo-automation: provider rate limit met; calls of this key are paced');
	};

	return {
		provider,

		async acquire({ tokens, maxWaitMs, signal }) {
			const started = now();
			const deadline = started + maxWaitMs;
			await discover(signal);
			let at: number;
			let demand: SlotDemand;
			for (;;) {
				const current = now();
				demand = demandAt(current, tokens);
				if (!demand.requests && !demand.tokens) {
					await refreshShared(current);
					at = Math.max(current, shared.holdUntil);
					if (at > deadline) return null;
				} else {
					const slot = await reserve(demand, current, Math.min(deadline, current + LOOKAHEAD_MS));
					shared = slot.shared;
					sharedReadAt = current;
					if (slot.at > deadline) return null;
					if (!slot.taken) {
						// Too far ahead to take yet: this call asks again when it is near, at the pace then in force.
						await sleep(Math.max(1, slot.at - LOOKAHEAD_MS - current), signal);
						continue;
					}
					at = slot.at;
				}
				if (at > current) await sleep(at - current, signal);
				// A 429 while this call waited moved the hold past its slot: the slot is stale, a new one is taken.
				if (shared.holdUntil <= at) break;
			}
			const waitedMs = Math.max(0, now() - started);
			if (waitedMs > 0) {
				providerPacedCalls.inc({ provider });
				providerPaceWait.observe({ provider }, waitedMs / 1000);
			}
			noteCall(at);
			return { sentAt: at, waitedMs, rate: demand.requests ? 1000 / demand.requests.unitMs : null };
		},

		observe,

		async rateLimited(slot, retryAfterMs, headers) {
			observe(headers);
			const at = now();
			await slowDown(slot, at);
			// The provider's bucket is empty: nothing goes before its hint (a unit of the pace without one), and the
			// schedule starts again from there without a burst.
			const cadence = demandAt(at, 0).requests;
			const until = at + (retryAfterMs ?? cadence?.unitMs ?? 0);
			if (until > at) await hold(until, cadence ? until + cadence.horizonMs - cadence.unitMs : undefined);
		},
	};
}
