import type { Knex } from 'knex';
import { ConflictError } from '../errors/index.ts';
import { assertWithinDailyCaps } from '../ledger/spend-caps.ts';
import { chargeTokens, lockPayer } from '../ledger/token-ledger.ts';
import { announceJob, hasActiveJob, insertJob, type JobProvider } from '../engine/job-store.ts';
import type { JobKind, JobMode } from '../engine/job-types.ts';
import type { PlanPage } from '../plan/plan-page.ts';
import { isUniqueViolation } from '../shared/database.ts';
import type { Logger } from '../shared/logger.ts';
import { transact } from '../shared/transaction.ts';
import { settleIdempotency } from '../idempotency/idempotent-request.ts';
import { requireOwnedPseo } from '../websites/ownership.ts';
import { selectRoutes } from './select-routes.ts';

export interface StartJobInput {
	userId: string;
	pseoId: number;
	postCount: number;
	mode: JobMode;
	/** Tokens per page: PSEO_TOKEN_PER_PAGE on demand, PSEO_TOKEN_PER_BATCH_PAGE in bulk. */
	rate: number;
	/** PSEO_USER_DAILY_TOKEN_CAP, or null. */
	userCap: number | null;
}

export interface StartJobDeps {
	database: Knex;
	logger: Logger;
	/**
	 * Picks the provider and model a job of the website runs with (jobs/job-provider.ts), once the caller's right to
	 * the website is checked; a model Settings → AI does not allow throws a 400. Without it, a job runs with the
	 * instance's default at each step.
	 */
	pickProvider?: (pseoId: number) => Promise<JobProvider>;
}

/** A job ready to be accepted: its website, owner, mode, rate and the exact pages it generates. */
export interface JobToAccept {
	userId: string;
	pseoId: number;
	mode: JobMode;
	/** What started it: its trigger's kind (engine/job-types.ts). */
	kind: JobKind;
	rate: number;
	routes: PlanPage[];
	planId: number | null;
	/** What the charge's ledger row says. */
	note: string;
	/** PSEO_USER_DAILY_TOKEN_CAP, or null; the website's own cap is read in the transaction. */
	userCap: number | null;
	/** A regeneration: the post its one route rewrites, and the owner's instructions. */
	regeneratePostId?: number;
	instructions?: string | null;
	provider?: JobProvider | null;
	/** A refresh: publish its published posts again once it ends. */
	republish?: boolean;
}

/** What accepting a job committed: its id and its number of pages. */
export interface AcceptedJob {
	id: number;
	pages: number;
}

export function activeConflict(pseoId: number) {
	return new ConflictError({ reason: `PSEO ${pseoId} already has a generation job pending or running.` });
}

/**
 * Accepts a generation job (interface section 3): checks ownership, picks the routes, and accepts them
 * (`acceptJob`).
 */
export async function startJob(deps: StartJobDeps, input: StartJobInput): Promise<AcceptedJob> {
	const { userId, pseoId, postCount, mode, rate, userCap } = input;
	await requireOwnedPseo(deps.database, pseoId, userId);
	// Cheap early answer; the unique index in acceptJob is what actually decides.
	if (await hasActiveJob(deps.database, pseoId)) throw activeConflict(pseoId);
	const { plan, routes } = await selectRoutes(deps.database, pseoId, postCount, deps.logger);
	return acceptJob(deps, { userId, pseoId, mode, kind: mode, rate, routes, planId: plan?.id ?? null, note: `${mode} generation of ${postCount} page(s)`, userCap });
}

/**
 * In ONE transaction, inserts the job `pending` and charges `rate × pages`. The job row carries
 * `active_pseo_id = pseo_id` under a unique index, so the database itself admits one active job per website
 * across every instance: a concurrent twin fails on the index (409) and its transaction, charge included, rolls
 * back. A short balance or a daily spend cap (402) rolls back the job row the same way. The payer's row is locked first, as in every
 * transaction that moves money, and a deadlock or serialization abort runs the transaction again
 * (shared/transaction.ts).
 */
export async function acceptJob(deps: StartJobDeps, job: JobToAccept): Promise<AcceptedJob> {
	const { userId, pseoId, mode, kind, rate, routes, planId, note, userCap, regeneratePostId = null, instructions = null, republish = false } = job;
	// Before the transaction: the pick may read Settings → AI.
	const provider = job.provider !== undefined ? job.provider : ((await deps.pickProvider?.(pseoId)) ?? null);
	try {
		const accepted = await transact(
			deps.database,
			async (trx) => {
				await lockPayer(trx, userId);
				await assertWithinDailyCaps(trx, { userId, pseoId, amount: rate * routes.length, userCap });
				const id = await insertJob(trx, { pseoId, userId, mode, kind, routes, rate, planId, regeneratePostId, instructions, provider, republish });
				await chargeTokens(trx, userId, rate * routes.length, { pseoId, generationId: id, note });
				const accepted = { id, pages: routes.length };
				// With an Idempotency-Key, the key records this job in the charge's transaction: a retry after a crash
				// before the answer gets this job, never a second one.
				await settleIdempotency(trx, accepted);
				return accepted;
			},
			{ logger: deps.logger, what: 'generation trigger', context: { userId, pseoId } },
		);
		announceJob(accepted.id);
		return accepted;
	} catch (error) {
		if (isUniqueViolation(error)) throw activeConflict(pseoId);
		throw error;
	}
}
