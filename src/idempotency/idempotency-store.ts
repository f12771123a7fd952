import type { Knex } from 'knex';
import { dbTimestamp, insertedId, isUniqueViolation, jsonFromDb } from '../shared/database.ts';

/*
 * Idempotency keys (IETF draft "The Idempotency-Key HTTP Header Field"; Stripe's API behaves the same way): one row
 * per key a user sent to a route, holding a hash of the request and, once it has one, its answer. A row is
 * `running` while its first request runs, `committed` once the request's own transaction (the one that charges) has
 * recorded its outcome, and `done` once the answer is stored. A request that failed leaves no row: nothing was
 * committed, so its retry runs afresh.
 */

/** The owner of the `pseo_idempotency_keys` table. */
export const IDEMPOTENCY_KEYS = 'pseo_idempotency_keys';

/** How long a key is remembered. */
const KEY_TTL_MS = 24 * 60 * 60 * 1000;

type KeyState = 'running' | 'committed' | 'done';

export interface StoredKey {
	id: number;
	requestHash: string;
	state: KeyState;
	/** What the request's transaction recorded (its job's id, say), from `committed` on. */
	outcome: unknown;
	response: { status: number; body: unknown } | null;
	/** Until when a `running` row belongs to its request; after it, the request is presumed dead. */
	lockedUntil: number;
	expiresAt: number;
}

export interface KeyScope {
	userId: string;
	/** The method and the concrete path, `POST /generations/4/retry`. */
	scope: string;
	key: string;
}

export async function readKey(knex: Knex, where: KeyScope): Promise<StoredKey | null> {
	const row = (await knex(IDEMPOTENCY_KEYS).where({ user_id: where.userId, scope: where.scope, idempotency_key: where.key }).first()) as
		| Record<string, unknown>
		| undefined;
	if (!row) return null;
	const status = row['response_status'];
	return {
		id: Number(row['id']),
		requestHash: String(row['request_hash']),
		state: row['state'] as KeyState,
		outcome: jsonFromDb<unknown>(row['outcome'], null),
		response: status === null || status === undefined ? null : { status: Number(status), body: jsonFromDb<unknown>(row['response_body'], null) },
		lockedUntil: Number(row['locked_until']),
		expiresAt: Number(row['expires_at']),
	};
}

/** Stores a new key as `running`; null when a concurrent twin stored it first. */
export async function insertKey(knex: Knex, where: KeyScope, requestHash: string, now: number, lockMs: number): Promise<number | null> {
	try {
		const inserted = await knex(IDEMPOTENCY_KEYS).insert(
			{
				user_id: where.userId,
				scope: where.scope,
				idempotency_key: where.key,
				request_hash: requestHash,
				state: 'running',
				locked_until: now + lockMs,
				expires_at: now + KEY_TTL_MS,
				date_created: dbTimestamp(knex),
			},
			['id'],
		);
		return insertedId(inserted);
	} catch (error) {
		if (isUniqueViolation(error)) return null;
		throw error;
	}
}

/**
 * Takes over a `running` row whose request is presumed dead (its lock lapsed), or an expired row of any state, for a
 * new request; false when another request took it first.
 */
export async function takeOverKey(knex: Knex, stored: StoredKey, requestHash: string, now: number, lockMs: number): Promise<boolean> {
	const updated = await knex(IDEMPOTENCY_KEYS)
		.where({ id: stored.id, state: stored.state, locked_until: stored.lockedUntil })
		.update({
			request_hash: requestHash,
			state: 'running',
			outcome: null,
			response_status: null,
			response_body: null,
			locked_until: now + lockMs,
			expires_at: now + KEY_TTL_MS,
			date_created: dbTimestamp(knex),
		});
	return updated === 1;
}

/** Records the request's outcome in the transaction that commits it (its charge, its job): from then on it is replayed. */
export async function commitKey(trx: Knex.Transaction, id: number, outcome: unknown): Promise<void> {
	await trx(IDEMPOTENCY_KEYS).where({ id, state: 'running' }).update({ state: 'committed', outcome: JSON.stringify(outcome ?? null) });
}

/** Stores the answer sent, so that every replay sends the same one. */
export async function storeResponse(knex: Knex, id: number, outcome: unknown, status: number, body: unknown): Promise<void> {
	await knex(IDEMPOTENCY_KEYS)
		.where({ id })
		.whereIn('state', ['running', 'committed'])
		.update({ state: 'done', outcome: JSON.stringify(outcome ?? null), response_status: status, response_body: JSON.stringify(body) });
}

/** Forgets a key whose request failed before committing anything: its retry runs afresh. */
export async function releaseKey(knex: Knex, id: number): Promise<void> {
	await knex(IDEMPOTENCY_KEYS).where({ id, state: 'running' }).delete();
}

/** Deletes keys past their 24 hours. */
export async function deleteExpiredKeys(knex: Knex, now: number): Promise<number> {
	return knex(IDEMPOTENCY_KEYS).where('expires_at', '<', now).delete();
}

/** Keeps a running request's hold on its key. */
export async function extendKeyLock(knex: Knex, id: number, until: number): Promise<void> {
	await knex(IDEMPOTENCY_KEYS).where({ id, state: 'running' }).update({ locked_until: until });
}
