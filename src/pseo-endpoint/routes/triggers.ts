import type { Router } from 'express';
import { useConfig } from '../../config/config.ts';
import { InvalidPayloadError } from '../../errors/index.ts';
import { startJob } from '../../jobs/start-job.ts';
import type { JobMode } from '../../engine/job-types.ts';
import { asyncHandler } from '../../http/async-handler.ts';
import { requireObjectBody, requirePositiveInteger, requireUser } from '../../http/request-input.ts';
import { respond } from '../../http/respond.ts';
import { MAX_ID } from '../../shared/database.ts';
import { faultPoint } from '../../shared/fault-injection.ts';
import type { ServiceContext } from '../../shared/services.ts';

/** Wakes the local runtime after a job is accepted, so it starts without waiting for the next sweep. */
export type JobNotifier = () => void;

/** 4.4 POST /trigger/on-demand-generation and 4.5 POST /trigger/bulk-generation. */
export function registerTriggers(router: Router, context: ServiceContext, notify: JobNotifier): void {
	const config = useConfig(context.env);
	const trigger = (mode: JobMode) =>
		asyncHandler(async (req, res) => {
			const accountability = requireUser(req);
			const body = requireObjectBody(req);
			const pseoId = requirePositiveInteger(body, 'pseo_id', MAX_ID);
			const postCount = requirePositiveInteger(body, 'post_count');
			if (mode === 'on_demand' && postCount !== 1) {
				throw new InvalidPayloadError({ reason: '"post_count" must be 1 for on-demand generation (test mode).' });
			}
			const rate = mode === 'on_demand' ? config.tokenPerPage : config.tokenPerBatchPage;
			const { id } = await startJob(context, { userId: accountability.user, pseoId, postCount, mode, rate, userCap: config.userDailyTokenCap });
			faultPoint('after-trigger-commit');
			notify();
			respond(res, 202, {
				message: `Generation of ${postCount} page(s) accepted; poll GET /pseo-endpoints/generations/${id} for progress.`,
				generation_id: id,
				status: 'pending',
			});
		});
	router.post('/trigger/on-demand-generation', trigger('on_demand'));
	router.post('/trigger/bulk-generation', trigger('bulk'));
}
