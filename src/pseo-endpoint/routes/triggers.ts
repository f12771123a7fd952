import type { Router } from 'express';
import { useConfig } from '../../config/config.ts';
import { bulkGenerationRoute, onDemandGenerationRoute } from '../../contracts/generations.ts';
import { startJob } from '../../jobs/start-job.ts';
import type { JobMode } from '../../engine/job-types.ts';
import { mountRoute } from '../../http/mount-route.ts';
import { parseRequest } from '../../http/parse-request.ts';
import { requireUser } from '../../http/request-input.ts';
import { respond } from '../../http/respond.ts';
import { faultPoint } from '../../shared/fault-injection.ts';
import type { ServiceContext } from '../../shared/services.ts';

/** Wakes the local runtime after a job is accepted, so it starts without waiting for the next sweep. */
export type JobNotifier = () => void;

/** 4.4 POST /trigger/on-demand-generation and 4.5 POST /trigger/bulk-generation. */
export function registerTriggers(router: Router, context: ServiceContext, notify: JobNotifier): void {
	const config = useConfig(context.env);
	const trigger = (mode: JobMode, contract: typeof onDemandGenerationRoute | typeof bulkGenerationRoute) =>
		mountRoute(router, contract, async (req, res) => {
			const accountability = requireUser(req);
			const { pseo_id: pseoId, post_count: postCount } = parseRequest(contract, req).body;
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
	trigger('on_demand', onDemandGenerationRoute);
	trigger('bulk', bulkGenerationRoute);
}
