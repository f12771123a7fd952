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
 * Directus runs its own checks of those fields (a taken email, a password policy, a field validation) after this
 * filter, and when it refuses the update, no action follows, and the edit is dropped with the request.
 */
const deferred = new WeakMap<Accountability, DeferredEdit>();

/**
 * `users.update` filter: an edit of `pseo_token_balance` (an admin's grant, in the app or with PATCH /users/:id)
 * is taken out of the payload and applied with its ledger row instead, in one transaction per user. Only admins
 * (or the system) may change a balance; Directus's own field permissions would stop others too, but this filter
 * runs before them and must not apply a change they would have refused.
 *
 * A balance sent alone is applied here, so the update's answer shows it. A balance sent with other fields waits
 * for the update's `users.update` action (`applyDeferredBalanceEdits`): applied here, it stayed when Directus then
 * refused the other fields, and the admin was told the update failed while the balance had changed. Such an
 * update may answer with the balance as it was, since the action runs beside the answer.
 */
export async function applyBalanceEdits(
	deps: { database: Knex; logger: Logger },
	payload: Record<string, unknown>,
	keys: readonly string[],
	accountability: Accountability | null,
): Promise<Record<string, unknown>> {
	if (!(BALANCE_FIELD in payload)) return payload;
	if (accountability && accountability.admin !== true) {
		throw new ForbiddenError({ resource: 'field', id: BALANCE_FIELD });
	}
	const { [BALANCE_FIELD]: raw, ...rest } = payload;
	const edit = { keys: [...keys], balance: parseBalance(raw), note: accountability?.user ? `set by ${accountability.user}` : 'set by the system' };
	if (accountability && Object.keys(rest).length > 0) deferred.set(accountability, edit);
	else await setBalances(deps, edit);
	return rest;
}

/** `users.update` action: the balance edit that waited for this update to commit, if any (see applyBalanceEdits). */
export async function applyDeferredBalanceEdits(deps: { database: Knex; logger: Logger }, keys: readonly string[], accountability: Accountability | null): Promise<void> {
	const edit = accountability ? deferred.get(accountability) : undefined;
	if (!edit || !sameKeys(edit.keys, keys)) return;
	deferred.delete(accountability!);
	await setBalances(deps, edit);
}

async function setBalances({ database, logger }: { database: Knex; logger: Logger }, edit: DeferredEdit): Promise<void> {
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
