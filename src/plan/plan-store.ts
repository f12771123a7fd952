import type { Knex } from 'knex';
import { ConflictError } from '../errors/index.ts';
import { assertWithinDailyCaps } from '../ledger/spend-caps.ts';
import { chargeTokens, lockPayer, refundTokens } from '../ledger/token-ledger.ts';
import { dbTimestamp, insertedId, isUniqueViolation, jsonFromDb } from '../shared/database.ts';
import type { Logger } from '../shared/logger.ts';
import { transact } from '../shared/transaction.ts';
import type { PlanPage } from './plan-page.ts';
import { replacePlanPages } from './plan-page-store.ts';
import { bumpPlanVersion } from './plan-version.ts';
import { postedRoutes } from '../posts/post-store.ts';
import { readWebsite } from '../websites/website-store.ts';

/** The owner of `pseo_main_json`: generation reads plans through the functions below. */
export const PLANS = 'pseo_main_json';

/** A stored content plan as generation reads it. */
export interface StoredPlan {
	id: number;
	language_code: string | null;
	description: string | null;
	pages: PlanPage[];
}

/** The current content plan of a website: its newest ready plan, or null. */
export async function readCurrentPlan(knex: Knex, pseoId: number): Promise<StoredPlan | null> {
	const row = (await knex(PLANS)
		.where({ pseo_id: pseoId, status: 'ready' })
		.orderBy('id', 'desc')
		.first('id', 'language_code', 'description', 'main_json')) as Record<string, unknown> | undefined;
	return row ? toStoredPlan(row) : null;
}

/** The plan `planId` (whatever its state), or null when it was deleted. */
export async function readPlan(knex: Knex, planId: number): Promise<StoredPlan | null> {
	const row = (await knex(PLANS).where('id', planId).first('id', 'language_code', 'description', 'main_json')) as
		| Record<string, unknown>
		| undefined;
	return row ? toStoredPlan(row) : null;
}

function toStoredPlan(row: Record<string, unknown>): StoredPlan {
	const plan = jsonFromDb<{ pages?: PlanPage[] }>(row['main_json'], {});
	return {
		id: Number(row['id']),
		language_code: (row['language_code'] as string | null) ?? null,
		description: (row['description'] as string | null) ?? null,
		pages: Array.isArray(plan.pages) ? plan.pages : [],
	};
}

/*
 * A plan generation holds a per-user lock that lives in the database, so it holds across instances: the plan
 * row is inserted `generating` with `active_user_id = user` under a unique index, and cleared when it ends. A
 * lock whose `lock_expires_at` passed (its request died: a crash, a kill -9) is released by the next request of
 * that user, and its tokens are refunded, so nothing stays blocked or charged for nothing.
 */

export interface PlanStart {
	userId: string;
	pseoId: number;
	languageCode: string;
	description: string | null;
	rate: number;
	/** An import: nothing is charged at the start; {@link completeImport} charges for the pages it added. */
	importing?: boolean;
	lockMs: number;
	/** PSEO_USER_DAILY_TOKEN_CAP, or null; the website's own cap is read in the transaction. */
	userCap: number | null;
}

/** Abandoned plan locks released per sweep; the next sweep takes the rest. */
const ABANDONED_PER_SWEEP = 50;

/**
 * Frees every abandoned plan lock (its request's instance died, so nothing renews it), refunding each plan's charge,
 * without waiting for its user to ask for another plan: run by every instance's sweep. Returns how many were freed.
 */
export async function releaseAbandonedPlans(knex: Knex, logger: Logger): Promise<number> {
	const users = (await knex(PLANS)
		.whereNotNull('active_user_id')
		.andWhere('lock_expires_at', '<', Date.now())
		.limit(ABANDONED_PER_SWEEP)
		.select('active_user_id')) as { active_user_id: string }[];
	let released = 0;
	for (const userId of new Set(users.map((row) => row.active_user_id))) {
		if (await releaseStaleLock(knex, userId, logger)) released++;
	}
	if (released > 0) logger.info({ plans: released }, 'pseo: abandoned content plans failed and refunded');
	return released;
}

/** Frees the user's abandoned plan lock, refunding its charge, in one transaction; true when it freed one. */
async function releaseStaleLock(knex: Knex, userId: string, logger: Logger): Promise<boolean> {
	const stale = (await knex(PLANS)
		.where('active_user_id', userId)
		.andWhere('lock_expires_at', '<', Date.now())
		.first('id', 'pseo_id', 'tokens_charged')) as { id: number; pseo_id: number; tokens_charged: number } | undefined;
	if (!stale) return false;
	return transact(knex, async (trx) => {
		await lockPayer(trx, userId);
		const updated = await trx(PLANS)
			.where({ id: stale.id, active_user_id: userId })
			.andWhere('lock_expires_at', '<', Date.now())
			.update({
				status: 'failed',
				active_user_id: null,
				lock_expires_at: null,
				error: 'Abandoned: the request that generated this plan stopped before it finished. The tokens were refunded.',
				date_updated: dbTimestamp(trx),
			});
		if (updated === 1 && Number(stale.tokens_charged) > 0) await refundPlan(trx, userId, { id: Number(stale.id), pseoId: Number(stale.pseo_id) }, Number(stale.tokens_charged));
		return updated === 1;
	}, { logger, what: 'stale plan lock release', context: { userId, planId: stale.id } });
}

/**
 * Takes the lock and charges the plan rate together: 409 when the user already has a plan generating, 402 when
 * short. The payer's row is locked first, as in every transaction that moves money.
 */
export async function startPlan(knex: Knex, input: PlanStart, logger: Logger): Promise<number> {
	await releaseStaleLock(knex, input.userId, logger);
	try {
		return await transact(knex, async (trx) => {
			await lockPayer(trx, input.userId);
			await assertWithinDailyCaps(trx, { userId: input.userId, pseoId: input.pseoId, amount: input.rate, userCap: input.userCap });
			const now = dbTimestamp(trx);
			const rows = await trx(PLANS).insert(
				{
					pseo_id: input.pseoId,
					user_id: input.userId,
					status: 'generating',
					language_code: input.languageCode,
					description: input.description,
					total_pages: 0,
					tokens_charged: input.importing ? 0 : input.rate,
					active_user_id: input.userId,
					lock_expires_at: Date.now() + input.lockMs,
					date_created: now,
					date_updated: now,
				},
				['id'],
			);
			const id = insertedId(rows);
			if (!input.importing) await chargeTokens(trx, input.userId, input.rate, { pseoId: input.pseoId, mainJsonId: id, note: 'content plan' });
			return id;
		}, { logger, what: 'content plan start', context: { userId: input.userId, pseoId: input.pseoId } });
	} catch (error) {
		if (isUniqueViolation(error)) {
			throw new ConflictError({ reason: 'A content plan is already being generated for this user; wait for it to finish.' });
		}
		throw error;
	}
}

/** Keeps a long generation's lock alive; false when it is no longer held. */
export async function extendLock(knex: Knex, planId: number, userId: string, lockMs: number): Promise<boolean> {
	const updated = await knex(PLANS)
		.where({ id: planId, active_user_id: userId })
		.update({ lock_expires_at: Date.now() + lockMs });
	return updated === 1;
}

/**
 * Stores the finished plan as the website's current plan, its pages as the website's plan pages (replacing the
 * previous plan's), and releases the lock, in one transaction. Only a plan still `generating` is completed: one
 * that was meanwhile declared abandoned (and refunded) stays failed.
 */
export async function completePlan(knex: Knex, planId: number, plan: { pages: PlanPage[]; total_pages: number }): Promise<void> {
	await knex.transaction(async (trx) => {
		const row = (await trx(PLANS).where('id', planId).first('pseo_id', 'user_id')) as { pseo_id: number; user_id: string | null } | undefined;
		const updated = await trx(PLANS)
			.where({ id: planId, status: 'generating' })
			.update({
				status: 'ready',
				main_json: JSON.stringify({ pages: plan.pages }),
				total_pages: plan.total_pages,
				active_user_id: null,
				lock_expires_at: null,
				pages_stored_at: dbTimestamp(trx),
				date_updated: dbTimestamp(trx),
			});
		if (updated !== 1 || !row) throw new Error('The plan took longer than its lock allows and was abandoned; its tokens were refunded.');
		const pseoId = Number(row.pseo_id);
		const userId = row.user_id ?? (await readWebsite(trx, pseoId))?.backend_user_id ?? null;
		await replacePlanPages(trx, { pseoId, userId, planId }, plan.pages, await postedRoutes(trx, pseoId));
	});
}

/**
 * Gives the website's current plan its rows when it has none yet: a plan stored as one JSON document before plan
 * pages were rows, or written (or rewritten) through the items API. Its pages replace the website's plan pages,
 * once: `pages_stored_at` records it, so pages an editor deleted afterwards stay deleted. Called on start-up and
 * before generation reads the plan; safe on several instances at once (the conditional update decides).
 */
export async function ensurePlanPages(knex: Knex, pseoId: number, logger: Logger): Promise<void> {
	const current = (await knex(PLANS).where({ pseo_id: pseoId, status: 'ready' }).orderBy('id', 'desc').first('id', 'pages_stored_at')) as
		| { id: number; pages_stored_at: unknown }
		| undefined;
	if (!current || (current.pages_stored_at !== null && current.pages_stored_at !== undefined)) return;
	// Several first uses at once (parallel triggers) may meet in the indexes' locks on MySQL: a deadlock runs again.
	const stored = await transact(knex, async (trx) => {
		const claimed = await trx(PLANS).where({ id: current.id }).whereNull('pages_stored_at').update({ pages_stored_at: dbTimestamp(trx) });
		if (claimed !== 1) return false;
		const row = (await trx(PLANS).where('id', current.id).first('id', 'user_id', 'language_code', 'description', 'main_json')) as Record<string, unknown>;
		// The rows belong to the website's owner, whoever wrote the plan (an admin, through the items API).
		const userId = (await readWebsite(trx, pseoId))?.backend_user_id ?? (row['user_id'] as string | null) ?? null;
		const owner = { pseoId, userId, planId: Number(current.id) };
		await replacePlanPages(trx, owner, toStoredPlan(row).pages, await postedRoutes(trx, pseoId));
		return true;
	}, { logger, what: 'plan pages from a plan document', context: { pseoId, planId: current.id } });
	if (stored) await bumpPlanVersion(knex, [pseoId], logger);
}

/** Start-up migration, additive: every website's current plan gets its rows, if it has none yet. */
export async function migratePlanDocuments(knex: Knex, logger: Logger): Promise<void> {
	const websites = (await knex(PLANS).where('status', 'ready').whereNull('pages_stored_at').distinct('pseo_id')) as { pseo_id: number }[];
	for (const { pseo_id } of websites) await ensurePlanPages(knex, Number(pseo_id), logger);
	if (websites.length > 0) logger.info({ websites: websites.length }, 'pseo: content plans stored as JSON documents have their plan pages as rows');
}

/**
 * Ends an import inside the transaction that stored its pages: charges `rate` per added page (402 when the
 * balance is short or a daily cap would pass, which rolls the whole import back), makes the import record the
 * website's current plan with its rows already stored, and releases the lock.
 */
export async function completeImport(
	trx: Knex.Transaction,
	planId: number,
	input: { userId: string; pseoId: number; rate: number; added: number; totalPages: number; userCap: number | null; summary: Record<string, unknown> },
): Promise<void> {
	const amount = input.rate * input.added;
	await lockPayer(trx, input.userId);
	// The import read and wrote its pages before this lock: its spending must be read as it is now.
	await assertWithinDailyCaps(trx, { userId: input.userId, pseoId: input.pseoId, amount, userCap: input.userCap, latest: true });
	if (amount > 0) await chargeTokens(trx, input.userId, amount, { pseoId: input.pseoId, mainJsonId: planId, note: `plan import of ${input.added} page(s)` });
	const now = dbTimestamp(trx);
	const updated = await trx(PLANS)
		.where({ id: planId, status: 'generating' })
		.update({
			status: 'ready',
			main_json: JSON.stringify(input.summary),
			total_pages: input.totalPages,
			tokens_charged: amount,
			active_user_id: null,
			lock_expires_at: null,
			pages_stored_at: now,
			date_updated: now,
		});
	if (updated !== 1) throw new Error('The import took longer than its lock allows and was abandoned.');
}

/** Marks the plan failed, refunds its charge and releases the lock, in one transaction. */
export async function failPlan(knex: Knex, planId: number, userId: string, error: string, logger: Logger): Promise<void> {
	await transact(knex, async (trx) => {
		await lockPayer(trx, userId);
		const row = (await trx(PLANS).where('id', planId).first('pseo_id', 'tokens_charged', 'status')) as
			| { pseo_id: number; tokens_charged: number; status: string }
			| undefined;
		if (!row || row.status !== 'generating') return;
		await trx(PLANS)
			.where('id', planId)
			.update({ status: 'failed', error, active_user_id: null, lock_expires_at: null, date_updated: dbTimestamp(trx) });
		if (Number(row.tokens_charged) > 0) await refundPlan(trx, userId, { id: planId, pseoId: Number(row.pseo_id) }, Number(row.tokens_charged));
	}, { logger, what: 'content plan failure', context: { userId, planId } });
}

async function refundPlan(trx: Knex.Transaction, userId: string, plan: { id: number; pseoId: number }, amount: number): Promise<void> {
	await refundTokens(trx, userId, amount, {
		pseoId: plan.pseoId,
		mainJsonId: plan.id,
		note: 'content plan failed',
		idempotencyKey: `refund:plan:${plan.id}`,
	});
}
