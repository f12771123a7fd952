import { AsyncLocalStorage } from 'node:async_hooks';
import { createHash } from 'node:crypto';
import type { Knex } from 'knex';
import { IdempotencyKeyInUseError, IdempotencyKeyReusedError, InvalidPayloadError } from '../errors/index.ts';
import { commitKey, extendKeyLock, insertKey, readKey, releaseKey, storeResponse, takeOverKey, type KeyScope, type StoredKey } from './idempotency-store.ts';

/*
 * A POST that creates or charges, made safe to retry: with an `Idempotency-Key` header, the first request runs and
 * its answer is kept for 24 hours; a repeat with the same body gets that answer again (`Idempotent-Replayed: true`),
 * a repeat with another body a 422, and a repeat while the first still runs a 409. The request's own transaction
 * records its outcome (`settleIdempotency`), so a process killed between that commit and the answer is replayed,
 * not run twice.
 */

/** The longest key the header may carry. */
const MAX_KEY_LENGTH = 255;

const scopes = new AsyncLocalStorage<{ keyId: number }>();

/**
 * Called inside the transaction that commits a request's effect (its charge, its job): with an Idempotency-Key, the
 * outcome is recorded with it, so that a retry after a crash before the answer replays it. A no-op otherwise.
 */
export async function settleIdempotency(trx: Knex.Transaction, outcome: unknown): Promise<void> {
	const scope = scopes.getStore();
	if (scope) await commitKey(trx, scope.keyId, outcome);
}

/** The `Idempotency-Key` header: null when absent, a 400 when it is not 1 to 255 printable ASCII characters. */
export function idempotencyKeyOf(header: string | string[] | undefined): string | null {
	if (header === undefined) return null;
	const value = Array.isArray(header) ? header.join(',') : header;
	if (value.length < 1 || value.length > MAX_KEY_LENGTH || !/^[\x21-\x7e]+$/.test(value)) {
		throw new InvalidPayloadError({ reason: `The Idempotency-Key header must be 1 to ${MAX_KEY_LENGTH} printable ASCII characters without spaces.` });
	}
	return value;
}

/** A fingerprint of a request's body: the same JSON, whatever the order of its keys, gives the same hash. */
export function requestHash(body: unknown): string {
	return createHash('sha256').update(canonicalJson(body ?? null)).digest('hex');
}

function canonicalJson(value: unknown): string {
	if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
	if (value && typeof value === 'object') {
		const entries = Object.entries(value as Record<string, unknown>)
			.filter(([, item]) => item !== undefined)
			.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
		return `{${entries.map(([key, item]) => `${JSON.stringify(key)}:${canonicalJson(item)}`).join(',')}}`;
	}
	return JSON.stringify(value) ?? 'null';
}

export interface IdempotentWork<O> {
	/** The request's work; the transaction that commits its effect calls `settleIdempotency` with the outcome. */
	run(): Promise<O>;
	/** The answer for an outcome: for the request itself, and for a replay after a crash. */
	answer(outcome: O): { status: number; payload: Record<string, unknown> };
}

export interface KeyedRequest {
	knex: Knex;
	/** Null without an Idempotency-Key: the work simply runs. */
	where: KeyScope | null;
	hash: string;
	/** How long the first request holds its key before it is presumed dead; renewed while it runs. */
	lockMs: number;
	/** The whole body of an answer's payload (the interface's success envelope). */
	envelope(payload: Record<string, unknown>): Record<string, unknown>;
}

/** What to send: the status, the whole body, and whether it is a replay. */
export interface Sent {
	status: number;
	body: unknown;
	replayed: boolean;
}

/** Runs `work` once per key, or answers what its first run answered. */
export async function runIdempotent<O>(request: KeyedRequest, work: IdempotentWork<O>): Promise<Sent> {
	const answered = (outcome: O) => {
		const { status, payload } = work.answer(outcome);
		return { status, body: request.envelope(payload) };
	};
	const { knex, where, lockMs } = request;
	if (!where) return { ...answered(await work.run()), replayed: false };

	const claimed = await claimKey(request, where);
	if ('replay' in claimed) {
		const stored = claimed.replay;
		if (stored.response) return { ...stored.response, replayed: true };
		// Committed by a request that died before it answered: its answer, rebuilt from what its transaction recorded.
		const rebuilt = answered(stored.outcome as O);
		await storeResponse(knex, stored.id, stored.outcome, rebuilt.status, rebuilt.body);
		return { ...rebuilt, replayed: true };
	}
	const keyId = claimed.keyId;
	const renew = setInterval(() => void extendKeyLock(knex, keyId, Date.now() + lockMs).catch(() => undefined), Math.max(100, Math.floor(lockMs / 3)));
	try {
		const outcome = await scopes.run({ keyId }, () => work.run());
		const sent = answered(outcome);
		await storeResponse(knex, keyId, outcome, sent.status, sent.body);
		return { ...sent, replayed: false };
	} catch (error) {
		// Nothing committed (the transaction that records the outcome rolled back, or never ran): the key is free again.
		await releaseKey(knex, keyId).catch(() => undefined);
		throw error;
	} finally {
		clearInterval(renew);
	}
}

/** The key's row for this request: a new one, one taken over from a dead or expired request, or one to replay. */
async function claimKey(request: KeyedRequest, where: KeyScope): Promise<{ keyId: number } | { replay: StoredKey }> {
	const { knex, hash, lockMs } = request;
	const now = Date.now();
	const stored = await readKey(knex, where);
	if (!stored) {
		const keyId = await insertKey(knex, where, hash, now, lockMs);
		if (keyId !== null) return { keyId };
		// A concurrent twin stored it first.
		const twin = await readKey(knex, where);
		if (twin && twin.requestHash !== hash) throw new IdempotencyKeyReusedError({ key: where.key });
		throw new IdempotencyKeyInUseError({ key: where.key });
	}
	const expired = stored.expiresAt <= now;
	if (!expired && stored.requestHash !== hash) throw new IdempotencyKeyReusedError({ key: where.key });
	if (!expired && stored.state !== 'running') return { replay: stored };
	if (!expired && stored.lockedUntil > now) throw new IdempotencyKeyInUseError({ key: where.key });
	if (!(await takeOverKey(knex, stored, hash, now, lockMs))) throw new IdempotencyKeyInUseError({ key: where.key });
	return { keyId: stored.id };
}
