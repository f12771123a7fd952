/*
 * The arithmetic of pacing, without I/O: the memory, Redis and database stores all run it (the Redis one as the same
 * steps in Lua), so that every instance takes slots by the same rule.
 *
 * A key's budget is scheduled like a token bucket, kept as a "theoretical arrival time" (GCRA): `tat` is the time at
 * which the budget would be whole again if nothing more were taken. A request costs `intervalMs` of it (the window
 * divided by the limit, times the request's share: one request, or its tokens) and may go once `tat + cost` is within
 * `horizonMs` of now, the burst the bucket allows. A slot is a reservation: the caller is told when it may go, and
 * sleeps until then, so that a store is written once per slot and never polled.
 */

/** One limited dimension of a key (requests, or tokens): what one unit costs, and the burst the bucket allows. */
export interface Cadence {
	/** Milliseconds of the budget one unit uses: the window divided by the limit. */
	unitMs: number;
	/** The burst, in milliseconds of budget: calls may go while the schedule runs at most this far ahead of now. */
	horizonMs: number;
}

/** What one call asks of its key. */
export interface SlotDemand {
	/** The cadence of requests; null when no request limit is known. */
	requests: Cadence | null;
	/** The cadence of input tokens; null when no token limit is known. */
	tokens: Cadence | null;
	/** The call's estimated input tokens. */
	tokenCount: number;
}

/** A key's shared schedule: times in milliseconds since the epoch. */
export interface SlotState {
	/** When the request budget is whole again if nothing more is taken. */
	requestTat: number;
	/** The same for the token budget. */
	tokenTat: number;
	/** No call may go before this time: the wait the provider last asked for. */
	holdUntil: number;
}

export const EMPTY_STATE: Readonly<SlotState> = Object.freeze({ requestTat: 0, tokenTat: 0, holdUntil: 0 });

/**
 * The slot of one call: when it may go, and the schedule once it is taken. When that time is after `deadline`, the
 * slot is refused (`state` null) and the schedule must stay as it was.
 */
export function reserveSlot(state: SlotState, demand: SlotDemand, now: number, deadline: number): { at: number; state: SlotState | null } {
	const requestCost = demand.requests ? demand.requests.unitMs : 0;
	const tokenCost = demand.tokens ? demand.tokens.unitMs * demand.tokenCount : 0;
	let at = Math.max(now, state.holdUntil);
	// A call dearer than the whole burst goes once the schedule has caught up with now, rather than never.
	if (demand.requests) at = Math.max(at, state.requestTat + requestCost - Math.max(demand.requests.horizonMs, requestCost));
	if (demand.tokens) at = Math.max(at, state.tokenTat + tokenCost - Math.max(demand.tokens.horizonMs, tokenCost));
	if (at > deadline) return { at, state: null };
	return {
		at,
		state: {
			requestTat: demand.requests ? Math.max(state.requestTat, at) + requestCost : state.requestTat,
			tokenTat: demand.tokens ? Math.max(state.tokenTat, at) + tokenCost : state.tokenTat,
			holdUntil: state.holdUntil,
		},
	};
}

/**
 * The cadence of a limit of `limit` units per `windowMs`. The burst is at most a second's worth, and 90 % of it: a
 * provider's bucket may be smaller than its window's limit ("60 RPM may be enforced as 1 request per second",
 * Anthropic), and the tenth left over absorbs the jitter between when a call is sent and when the provider counts it.
 */
export function cadenceOf(limit: number, windowMs: number): Cadence {
	const unitMs = windowMs / limit;
	return { unitMs, horizonMs: Math.max(unitMs, 0.9 * Math.min(windowMs, 1000)) };
}

/**
 * The rate a key is paced to after 429s when no limit is known (AIMD): halved at a 429, then growing. After the first
 * 429 it doubles every `START_DOUBLING_MS` (a slow start: the rate the first 429 was seen at is this instance's own,
 * and other instances may share the key); after a later one it grows by `STEADY_GROWTH` of itself each second, back
 * to the rate the provider refused in about 4 s and beyond, slowly, until the next 429.
 */
export interface LearntRate {
	/** Requests per second at `since`. */
	rate: number;
	/** When the rate was last cut, in milliseconds since the epoch. */
	since: number;
	phase: 'start' | 'steady';
}

const START_DOUBLING_MS = 2000;
const STEADY_GROWTH = 0.05;
/** After this long without a 429 the learnt rate is forgotten and calls go unpaced again. */
export const LEARNT_RATE_TTL_MS = 10 * 60_000;
/** The slowest a learnt rate goes: one request every 10 seconds. */
const MIN_RATE = 0.1;
/**
 * The slowest a first cut starts from: one request a second. A lone call's 429 says little of the limit (half of the
 * calls a second it was seen at would be one every four seconds); later cuts take the rate lower if need be.
 */
const START_FLOOR = 1;
/** The cut at a 429: to this share of the rate the provider refused. */
const DECREASE = 0.8;

/** The learnt rate at `now`, in requests per second; null when there is none, or it has been forgotten. */
export function learntRateAt(learnt: LearntRate | null, now: number): number | null {
	if (!learnt) return null;
	const elapsed = Math.max(0, now - learnt.since);
	if (elapsed > LEARNT_RATE_TTL_MS) return null;
	return learnt.phase === 'start' ? learnt.rate * 2 ** (elapsed / START_DOUBLING_MS) : learnt.rate * (1 + (STEADY_GROWTH * elapsed) / 1000);
}

/**
 * The learnt rate after a 429 of a call that went at `sent.at`, paced to `sent.rate` requests per second (null when it
 * went unpaced); null when that 429 says nothing new: the call went before the last cut, at a rate already abandoned.
 * A paced call cuts the rate it went at; an unpaced one, with nothing learnt yet, starts from half of `observedRate`
 * (the calls per second this instance made just before, and at least one a second), and grows from there quickly.
 */
export function cutRate(learnt: LearntRate | null, sent: { at: number; rate: number | null }, observedRate: number, now: number): LearntRate | null {
	const current = learntRateAt(learnt, sent.at);
	if (learnt && current !== null && sent.at <= learnt.since) return null;
	const paced = Math.min(current ?? Number.POSITIVE_INFINITY, sent.rate ?? Number.POSITIVE_INFINITY);
	if (paced === Number.POSITIVE_INFINITY) return { rate: Math.max(START_FLOOR, observedRate / 2), since: now, phase: 'start' };
	return { rate: Math.max(MIN_RATE, paced * DECREASE), since: now, phase: 'steady' };
}
