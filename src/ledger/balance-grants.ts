import type { Accountability } from '@directus/types';
import type { Knex } from 'knex';
import { ForbiddenError, InvalidPayloadError } from '../errors/index.ts';
import type { Logger } from '../shared/logger.ts';
import { transact } from '../shared/transaction.ts';
import { BALANCE_FIELD, recordGrant, setBalanceAsGrant } from './token-ledger.ts';

function parseBalance(value: unknown): number {
	const parsed = typeof value === 'string' && /^\d+$/.test(value.trim()) ? Number(value) : value;
	if (typeof parsed !== 'number' || !Number.isSafeInteger(parsed) || parsed < 0) {
		throw new InvalidPayloadError({ reason: `"${BALANCE_FIELD}" must be a non-negative integer.` });
	}
	return parsed;
}

/** A balance edit that waits for the rest of its user update to commit. */
interface DeferredEdit {
	keys: string[];
	balance: number;
	note: string;
}

/**
 * Balance edits that came with other fields of the user, by the accountability of the request that made them:
 * Directus checks those fields (a taken email, a password policy, a field validation) after this filter, and when
 * it refuses the update, no action follows. Directus calls action handlers synchronously at the end of an update,
 * so an edit still here when the same accountability updates the same users again belongs to an update that was
 * refused (GraphQL runs the next mutation of a document after a refused one): it is dropped then, or with the
 * request.
 */
const deferred = new WeakMap<Accountability, DeferredEdit[]>();
/**
 * The same for updates without an accountability (the system, a Flow run with full access, another extension's
 * services), by the payload this filter returns: without an accountability, Directus hands that very object to
 * the update's action, and drops it with a refused update.
 */
const deferredByPayload = new WeakMap<object, DeferredEdit>();

/**
 * `users.update` filter: an edit of `pseo_token_balance` (an admin's grant, in the app or with PATCH /users/:id)
 * is taken out of the payload and applied with its ledger row instead. Only admins (or the system) may change a
 * balance; Directus's own field permissions would stop others too, but this filter runs before them and must not
 * apply a change they would have refused. When is it applied:
 * - inside the update's transaction, when Directus runs the update in one (a batch update: `PATCH /users` with an
 *   array, GraphQL's `update_users_batch`), so it commits or rolls back with the update;
 * - here, in its own transaction per user, when the balance is sent alone (nothing else of the update can be
 *   refused, and the update's answer shows the new balance);
 * - otherwise once the update committed, in its `users.update` action (`takeDeferredEdit`): applied here, it
 *   stayed when Directus then refused the other fields, and the admin was told the update failed while the
 *   balance had changed. Such an update may answer with the previous balance, since the action runs beside the
 *   answer.
 */
export async function applyBalanceEdits(
	deps: { database: Knex; logger: Logger },
	payload: Record<string, unknown>,
	keys: readonly string[],
	accountability: Accountability | null,
	updateDatabase?: Knex,
): Promise<Record<string, unknown>> {
	if (accountability) {
		const stale = deferred.get(accountability)?.filter((edit) => !sameKeys(edit.keys, keys));
		if (stale) deferred.set(accountability, stale);
	}
	if (!(BALANCE_FIELD in payload)) return payload;
	if (accountability && accountability.admin !== true) {
		throw new ForbiddenError({ resource: 'field', id: BALANCE_FIELD });
	}
	const { [BALANCE_FIELD]: raw, ...rest } = payload;
	const edit = { keys: [...keys], balance: parseBalance(raw), note: accountability?.user ? `set by ${accountability.user}` : 'set by the system' };
	if (updateDatabase?.isTransaction) {
		for (const userId of edit.keys) await setBalanceAsGrant(updateDatabase as Knex.Transaction, userId, edit.balance, edit.note);
	} else if (Object.keys(rest).length > 0) {
		if (accountability) deferred.set(accountability, [...(deferred.get(accountability) ?? []), edit]);
		else deferredByPayload.set(rest, edit);
	} else {
		await setBalances(deps, edit);
	}
	return rest;
}

/**
 * For the `users.update` action: takes the balance edit that waited for this update (see applyBalanceEdits).
 * Synchronous, so that it is taken before another update of the same accountability begins.
 */
export function takeDeferredEdit(keys: readonly string[], accountability: Accountability | null, payload: unknown): DeferredEdit | null {
	if (!accountability) {
		const edit = typeof payload === 'object' && payload !== null ? deferredByPayload.get(payload) : undefined;
		if (!edit || !sameKeys(edit.keys, keys)) return null;
		deferredByPayload.delete(payload as object);
		return edit;
	}
	const edits = deferred.get(accountability);
	const edit = edits?.find((candidate) => sameKeys(candidate.keys, keys));
	if (!edit) return null;
	deferred.set(accountability, edits!.filter((candidate) => candidate !== edit));
	return edit;
}

/** Applies a balance edit, each user in a transaction of its own that locks the payer first. */
export async function setBalances({ database, logger }: { database: Knex; logger: Logger }, edit: DeferredEdit): Promise<void> {
	for (const userId of edit.keys) {
		await transact(database, (trx) => setBalanceAsGrant(trx, userId, edit.balance, edit.note), { logger, what: 'balance edit', context: { userId } });
	}
}

function sameKeys(a: readonly string[], b: readonly string[]): boolean {
	return a.length === b.length && [...a].sort().join('\n') === [...b].sort().join('\n');
}

/** `users.create` action: a user created with a starting balance gets that balance recorded as a grant. */
export async function recordInitialBalance(
	database: Knex,
	userId: string,
	payload: Record<string, unknown>,
	accountability: Accountability | null,
): Promise<void> {
	if (!(BALANCE_FIELD in payload)) return;
	const balance = Number(payload[BALANCE_FIELD]);
	if (!Number.isSafeInteger(balance) || balance <= 0) return;
	await recordGrant(database, userId, balance, accountability?.user ? `initial balance set by ${accountability.user}` : 'initial balance');
}
