import type { Knex } from 'knex';
import { ConflictError } from '../errors/index.ts';
import { chargeTokens, lockPayer } from '../ledger/token-ledger.ts';
import { hasActiveJob, insertJob } from '../engine/job-store.ts';
import type { JobMode } from '../engine/job-types.ts';
import { isUniqueViolation } from '../shared/database.ts';
import type { Logger } from '../shared/logger.ts';
import { transact } from '../shared/transaction.ts';
import { requireOwnedPseo } from '../websites/ownership.ts';
import { selectRoutes } from './select-routes.ts';

export interface StartJobInput {
	userId: string;
	pseoId: number;
	postCount: number;
	mode: JobMode;
	/** Tokens per page: PSEO_TOKEN_PER_PAGE on demand, PSEO_TOKEN_PER_BATCH_PAGE in bulk. */
	rate: number;
}

export interface StartJobDeps {
	database: Knex;
	logger: Logger;
}

function activeConflict(pseoId: number) {
	return new ConflictError({ reason: `PSEO ${pseoId} already has a generation job pending or running.` });
}

/**
 * Accepts a generation job (interface section 3): checks ownership, picks the routes, then in ONE transaction
 * inserts the job `pending` and charges `rate × postCount`. The job row carries `active_pseo_id = pseo_id`
 * under a unique index, so the database itself admits one active job per website across every instance: a
 * concurrent twin fails on the index (409) and its transaction, charge included, rolls back. A short balance
 * (402) rolls back the job row the same way. The payer's row is locked first, as in every transaction that moves
 * money, and a deadlock or serialization abort runs the transaction again (shared/transaction.ts).
 */
export async function startJob(deps: StartJobDeps, input: StartJobInput): Promise<{ id: number }> {
	const { database: knex, logger } = deps;
	const { userId, pseoId, postCount, mode, rate } = input;
	await requireOwnedPseo(knex, pseoId, userId);
	// Cheap early answer; the unique index below is what actually decides.
	if (await hasActiveJob(knex, pseoId)) throw activeConflict(pseoId);
	const { plan, routes } = await selectRoutes(knex, pseoId, postCount);

	try {
		return await transact(
			knex,
			async (trx) => {
				await lockPayer(trx, userId);
				const id = await insertJob(trx, { pseoId, userId, mode, routes, rate, planId: plan.id });
				await chargeTokens(trx, userId, rate * postCount, { generationId: id, note: `${mode} generation of ${postCount} page(s)` });
				return { id };
			},
			{ logger, what: 'generation trigger', context: { userId, pseoId } },
		);
	} catch (error) {
		if (isUniqueViolation(error)) throw activeConflict(pseoId);
		throw error;
	}
}
