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

/**
 * `users.update` filter: an edit of `pseo_token_balance` (an admin's grant, in the app or with PATCH /users/:id)
 * is taken out of the payload and applied here instead, together with its ledger row, in one transaction per
 * user. Only admins (or the system) may change a balance; Directus's own field permissions would stop others
 * too, but this filter runs before them and must not apply a change they would have refused.
 */
export async function applyBalanceEdits(
	{ database, logger }: { database: Knex; logger: Logger },
	payload: Record<string, unknown>,
	keys: readonly string[],
	accountability: Accountability | null,
): Promise<Record<string, unknown>> {
	if (!(BALANCE_FIELD in payload)) return payload;
	if (accountability && accountability.admin !== true) {
		throw new ForbiddenError({ resource: 'field', id: BALANCE_FIELD });
	}
	const { [BALANCE_FIELD]: raw, ...rest } = payload;
	const balance = parseBalance(raw);
	const note = accountability?.user ? `set by ${accountability.user}` : 'set by the system';
	for (const userId of keys) {
		await transact(database, (trx) => setBalanceAsGrant(trx, userId, balance, note), { logger, what: 'balance edit', context: { userId } });
	}
	return rest;
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
