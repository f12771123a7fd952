import { Redis, type RedisOptions } from 'ioredis';
import type { Logger } from '../../shared/logger.ts';
import type { PacingStore, SharedPace } from './pacing-store.ts';
import { LEARNT_RATE_TTL_MS, type LearntRate } from './slot-schedule.ts';

/** Redis keys of the pacing: one hash per provider key (pacer-key.ts). */
const PREFIX = 'pseo:pacing:';

/*
 * Each script is one atomic step on a key's hash: `r` and `t` the request and token schedules, `h` the hold, `lr`,
 * `ls` and `lp` the learnt rate (requests per second, since when, phase). Times are milliseconds, written with three
 * decimals; Lua numbers are doubles, and the reply carries them as strings, which Redis would otherwise truncate to
 * integers. A hash outlives its last slot by the learnt rate's lifetime, then expires.
 */

const FIELDS = `local v = redis.call('HMGET', KEYS[1], 'r', 't', 'h', 'lr', 'ls', 'lp')`;
const EXPIRE = `redis.call('PEXPIRE', KEYS[1], math.ceil(math.max(r - now, t - now, h - now, 0)) + ${LEARNT_RATE_TTL_MS})`;

/** slot-schedule.ts's reserveSlot, in Lua. ARGV: now, not after, request unit, request horizon, token cost, token horizon ('' for a dimension without a limit). */
const RESERVE = `
${FIELDS}
local r = tonumber(v[1]) or 0
local t = tonumber(v[2]) or 0
local h = tonumber(v[3]) or 0
local now = tonumber(ARGV[1])
local deadline = tonumber(ARGV[2])
local ru = tonumber(ARGV[3])
local rh = tonumber(ARGV[4])
local tc = tonumber(ARGV[5])
local th = tonumber(ARGV[6])
local at = math.max(now, h)
if ru then at = math.max(at, r + ru - math.max(rh, ru)) end
if tc then at = math.max(at, t + tc - math.max(th, tc)) end
local taken = '0'
if at <= deadline then
	if ru then r = math.max(r, at) + ru end
	if tc then t = math.max(t, at) + tc end
	redis.call('HSET', KEYS[1], 'r', string.format('%.3f', r), 't', string.format('%.3f', t))
	${EXPIRE}
	taken = '1'
end
return { string.format('%.3f', at), taken, v[3] or '', v[4] or '', v[5] or '', v[6] or '' }
`;

/** ARGV: now, until, request schedule at least ('' to leave it). */
const HOLD = `
${FIELDS}
local r = tonumber(v[1]) or 0
local t = tonumber(v[2]) or 0
local h = tonumber(v[3]) or 0
local now = tonumber(ARGV[1])
h = math.max(h, tonumber(ARGV[2]))
r = math.max(r, tonumber(ARGV[3]) or 0)
redis.call('HSET', KEYS[1], 'h', string.format('%.3f', h), 'r', string.format('%.3f', r))
${EXPIRE}
return 1
`;

/** ARGV: now, expected since ('' for none), rate, since, phase. */
const LEARN = `
${FIELDS}
local r = tonumber(v[1]) or 0
local t = tonumber(v[2]) or 0
local h = tonumber(v[3]) or 0
local now = tonumber(ARGV[1])
if (v[5] or '') == ARGV[2] then
	redis.call('HSET', KEYS[1], 'lr', ARGV[3], 'ls', ARGV[4], 'lp', ARGV[5])
	${EXPIRE}
	return { ARGV[3], ARGV[4], ARGV[5] }
end
return { v[4] or '', v[5] or '', v[6] or '' }
`;

interface PacingCommands {
	pseoPacingReserve(key: string, ...args: string[]): Promise<string[]>;
	pseoPacingHold(key: string, ...args: string[]): Promise<number>;
	pseoPacingLearn(key: string, ...args: string[]): Promise<string[]>;
}

const number = (value: number | null | undefined): string => (value === null || value === undefined ? '' : value.toFixed(3));

function learntOf(rate: string | undefined, since: string | undefined, phase: string | undefined): LearntRate | null {
	const parsedRate = Number(rate);
	const parsedSince = Number(since);
	if (!rate || !since || !Number.isFinite(parsedRate) || !Number.isFinite(parsedSince)) return null;
	return { rate: parsedRate, since: parsedSince, phase: phase === 'start' ? 'start' : 'steady' };
}

/** How long a Redis command may take before the pacer falls back to its own memory for that call. */
const COMMAND_TIMEOUT_MS = 2000;
/** A connection failure is logged at most this often. */
const ERROR_LOG_MS = 60_000;

/**
 * The pacing shared through Directus's Redis (`REDIS`, or `REDIS_HOST`...: see config.ts): one hash per key, every
 * step of it one Lua script, so that a slot costs one round trip whatever the number of instances. Connects on
 * first use; a command that fails or times out rejects, and the pacer paces alone for that call.
 */
export function createRedisPacingStore(connection: string | Record<string, unknown>, logger: Logger): PacingStore & { close(): Promise<void> } {
	const options: RedisOptions = { lazyConnect: true, maxRetriesPerRequest: 1, commandTimeout: COMMAND_TIMEOUT_MS, connectTimeout: COMMAND_TIMEOUT_MS };
	const redis = typeof connection === 'string' ? new Redis(connection, options) : new Redis({ ...connection, ...options });
	let lastError = Number.NEGATIVE_INFINITY;
	redis.on('error', (error: unknown) => {
		if (Date.now() - lastError < ERROR_LOG_MS) return;
		lastError = Date.now();
		logger.warn({ err: error }, 'pseo-automation: the Redis of the provider pacing is unreachable; each instance paces alone meanwhile');
	});
	redis.defineCommand('pseoPacingReserve', { numberOfKeys: 1, lua: RESERVE });
	redis.defineCommand('pseoPacingHold', { numberOfKeys: 1, lua: HOLD });
	redis.defineCommand('pseoPacingLearn', { numberOfKeys: 1, lua: LEARN });
	const commands = redis as unknown as PacingCommands;

	const shared = (hold: string | undefined, rate: string | undefined, since: string | undefined, phase: string | undefined): SharedPace => ({
		holdUntil: Number(hold) || 0,
		learnt: learntOf(rate, since, phase),
	});

	return {
		async reserve(key, demand, now, notAfter) {
			const tokenCost = demand.tokens ? demand.tokens.unitMs * demand.tokenCount : null;
			const [at, taken, hold, rate, since, phase] = await commands.pseoPacingReserve(
				PREFIX + key,
				number(now),
				number(notAfter),
				number(demand.requests?.unitMs),
				number(demand.requests?.horizonMs),
				number(tokenCost),
				number(demand.tokens?.horizonMs),
			);
			return { at: Number(at), taken: taken === '1', shared: shared(hold, rate, since, phase) };
		},
		async hold(key, until, requestTat) {
			await commands.pseoPacingHold(PREFIX + key, number(Date.now()), number(until), number(requestTat));
		},
		async read(key) {
			const [hold, rate, since, phase] = await redis.hmget(PREFIX + key, 'h', 'lr', 'ls', 'lp');
			return shared(hold ?? undefined, rate ?? undefined, since ?? undefined, phase ?? undefined);
		},
		async learn(key, expected, next) {
			const [rate, since, phase] = await commands.pseoPacingLearn(PREFIX + key, number(Date.now()), number(expected?.since), number(next.rate), number(next.since), next.phase);
			return learntOf(rate, since, phase);
		},
		async close() {
			redis.disconnect();
		},
	};
}
