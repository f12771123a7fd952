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
	for (const cap of await capsToday(trx, check, check.latest)) {
		if (check.amount > cap.left) throw new SpendCapError({ ...cap, required: check.amount });
	}
}

/** What is left today of the user's cap and of the website's `daily_token_cap`, those that are set. */
async function capsToday(knex: Knex, scope: { userId: string; pseoId: number; userCap: number | null }, latest = false): Promise<{ cap: 'user' | 'website'; limit: number; left: number }[]> {
	const since = startOfUtcDay(new Date());
	const caps: { cap: 'user' | 'website'; limit: number; left: number }[] = [];
	if (scope.userCap !== null) caps.push({ cap: 'user', limit: scope.userCap, left: Math.max(0, scope.userCap - (await spentSince(knex, since, { userId: scope.userId }, latest))) });
	const websiteCap = await readDailyTokenCap(knex, scope.pseoId);
	if (websiteCap !== null) caps.push({ cap: 'website', limit: websiteCap, left: Math.max(0, websiteCap - (await spentSince(knex, since, { pseoId: scope.pseoId }, latest))) });
	return caps;
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
	const caps = await capsToday(trx, scope);
	return Math.max(0, Math.min(await readBalance(trx, scope.userId), ...caps.map((cap) => cap.left)));
}
