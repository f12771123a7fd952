import type { Router } from 'express';
import { useConfig } from '../../config/config.ts';
import { bulkGenerationRoute, onDemandGenerationRoute, refreshGenerationRoute } from '../../contracts/generations.ts';
import { refreshJob } from '../../jobs/refresh-job.ts';
import { startJob, type AcceptedJob } from '../../jobs/start-job.ts';
import { providerPicker } from '../../websites/website-provider.ts';
import { providerSourceFor } from '../../provider/create-provider.ts';
import type { JobMode } from '../../engine/job-types.ts';
import { mountIdempotentRoute } from '../../http/mount-route.ts';
import { parseRequest } from '../../http/parse-request.ts';
import { faultPoint } from '../../shared/fault-injection.ts';
import type { ServiceContext } from '../../shared/services.ts';

/** Wakes the local runtime after a job is accepted, so it starts without waiting for the next sweep. */
export type JobNotifier = () => void;

/** 4.4 POST /trigger/on-demand-generation, 4.5 POST /trigger/bulk-generation, and POST /trigger/refresh-generation. */
export function registerTriggers(router: Router, context: ServiceContext, notify: JobNotifier): void {
	const config = useConfig(context.env);
	const trigger = (mode: JobMode, contract: typeof onDemandGenerationRoute | typeof bulkGenerationRoute) =>
		mountIdempotentRoute(router, contract, { database: context.database, lockMs: config.leaseMs }, (req, { user: userId }) => {
			const { pseo_id: pseoId, post_count: postCount } = parseRequest(contract, req).body;
			const rate = mode === 'on_demand' ? config.tokenPerPage : config.tokenPerBatchPage;
			return {
				run: async () => {
					const pickProvider = providerPicker(context.database, providerSourceFor(config, context.logger, context));
					const accepted = await startJob({ ...context, pickProvider }, { userId, pseoId, postCount, mode, rate, userCap: config.userDailyTokenCap });
					faultPoint('after-trigger-commit');
					notify();
					return accepted;
				},
				answer: ({ id, pages }: AcceptedJob) => ({
					status: 202,
					payload: { message: `Generation of ${pages} page(s) accepted; poll GET /pseo-endpoints/generations/${id} for progress.`, generation_id: id, status: 'pending' },
				}),
			};
		});
	trigger('on_demand', onDemandGenerationRoute);
	trigger('bulk', bulkGenerationRoute);
	mountIdempotentRoute(router, refreshGenerationRoute, { database: context.database, lockMs: config.leaseMs }, (req, { user: userId }) => {
		const { pseo_id: pseoId, post_count: postCount, republish } = parseRequest(refreshGenerationRoute, req).body;
		return {
			run: async () => {
				const pickProvider = providerPicker(context.database, providerSourceFor(config, context.logger, context));
				const accepted = await refreshJob({ ...context, config, pickProvider }, { userId, pseoId, postCount: postCount ?? null, republish: republish ?? true });
				notify();
				return accepted;
			},
			answer: ({ id, pages }: AcceptedJob) => ({
				status: 202,
				payload: { message: `Refresh of ${pages} stale page(s) accepted; poll GET /pseo-endpoints/generations/${id} for progress.`, generation_id: id, status: 'pending' },
			}),
		};
	});
}
