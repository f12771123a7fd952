import type { Knex } from 'knex';
import { SpendCapError } from '../errors/index.ts';
import { readDailyTokenCap } from '../websites/website-store.ts';
import { readBalance, spentSince } from './token-ledger.ts';

/** A charge about to be made, and the per-user cap of the instance (PSEO_USER_DAILY_TOKEN_CAP). */
export interface CapCheck {
	userId: string;
	pseoId: number;
	amount: number;
	userCap: number | null;
	/** The transaction read before it locked the payer: spending is read with a locking read (see spentSince). */
	latest?: boolean;
}

/** Midnight UTC of the day `now` is in: caps count per UTC day. */
function startOfUtcDay(now: Date): Date {
	return new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate()));
}

/**
 * Throws SpendCapError (402) when the charge would take today's spending (charges less refunds, since midnight UTC)
 * past the user's cap or the website's `daily_token_cap`. Call it inside the charge's transaction, after
 * `lockPayer`: a website belongs to one user, so that lock orders every charge a cap counts, on every instance,
 * and two concurrent charges cannot both fit into the same remainder.
 */
export async function assertWithinDailyCaps(trx: Knex.Transaction, check: CapCheck): Promise<void> {
	if (check.amount === 0) return;
	const since = startOfUtcDay(new Date());
	if (check.userCap !== null) {
		const left = Math.max(0, check.userCap - (await spentSince(trx, since, { userId: check.userId }, check.latest)));
		if (check.amount > left) throw new SpendCapError({ cap: 'user', limit: check.userCap, left, required: check.amount });
	}
	const websiteCap = await readDailyTokenCap(trx, check.pseoId);
	if (websiteCap !== null) {
		const left = Math.max(0, websiteCap - (await spentSince(trx, since, { pseoId: check.pseoId }, check.latest)));
		if (check.amount > left) throw new SpendCapError({ cap: 'website', limit: websiteCap, left, required: check.amount });
	}
}

/**
 * What is left today of a user's cap (PSEO_USER_DAILY_TOKEN_CAP), so that a client can say before a click that a
 * charge would pass it; null without a cap. A plain read: the charge itself checks again under the payer's lock.
 */
export async function userCapToday(knex: Knex, userId: string, cap: number | null): Promise<{ limit: number; left: number } | null> {
	if (cap === null) return null;
	return { limit: cap, left: Math.max(0, cap - (await spentSince(knex, startOfUtcDay(new Date()), { userId }))) };
}

/**
 * The most tokens `userId` may still spend today on `pseoId`: their balance, bounded by what is left of the user's
 * cap and of the website's `daily_token_cap`. A plain read, taking no lock (a followed collection's sync reads it
 * before its pages, and takes the payer's lock only to charge, as every charge does): a charge that commits meanwhile
 * makes the sync's own charge fail its checks, and the sync is tried again.
 */
export async function spendableToday(trx: Knex.Transaction, scope: { userId: string; pseoId: number; userCap: number | null }): Promise<number> {
	const since = startOfUtcDay(new Date());
	let left = await readBalance(trx, scope.userId);
	if (scope.userCap !== null) left = Math.min(left, scope.userCap - (await spentSince(trx, since, { userId: scope.userId })));
	const websiteCap = await readDailyTokenCap(trx, scope.pseoId);
	if (websiteCap !== null) left = Math.min(left, websiteCap - (await spentSince(trx, since, { pseoId: scope.pseoId })));
	return Math.max(0, left);
}
