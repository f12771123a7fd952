import type { Router } from 'express';
import { useConfig } from '../../config/config.ts';
import { cancelGenerationRoute, getGenerationRoute, listGenerationsRoute, retryGenerationRoute } from '../../contracts/generations.ts';
import { cancelJob } from '../../jobs/cancel-job.ts';
import { getGeneration, listGenerations } from '../../jobs/read-jobs.ts';
import { retryJob } from '../../jobs/retry-job.ts';
import { providerPicker } from '../../websites/website-provider.ts';
import type { AcceptedJob } from '../../jobs/start-job.ts';
import { mountIdempotentRoute, mountRoute } from '../../http/mount-route.ts';
import { parseRequest } from '../../http/parse-request.ts';
import { requireUser } from '../../http/request-input.ts';
import { respond } from '../../http/respond.ts';
import { providerSourceFor } from '../../provider/create-provider.ts';
import type { ServiceContext } from '../../shared/services.ts';
import { requestSchema } from '../request-schema.ts';
import type { JobNotifier } from './triggers.ts';

/**
 * 4.6 GET /generations/:id and 4.7 GET /generations?pseo_id=X — how clients watch progress — and the job's
 * controls: POST /generations/:id/cancel and POST /generations/:id/retry.
 */
export function registerGenerations(router: Router, context: ServiceContext, notify: JobNotifier): void {
	const config = useConfig(context.env);
	mountRoute(router, listGenerationsRoute, async (req, res) => {
		const accountability = requireUser(req);
		const { pseo_id: pseoId } = parseRequest(listGenerationsRoute, req).query;
		const data = await listGenerations(context, accountability, await requestSchema(req, context), pseoId);
		respond(res, 200, { data });
	});
	mountRoute(router, getGenerationRoute, async (req, res) => {
		const accountability = requireUser(req);
		const { id } = parseRequest(getGenerationRoute, req).params;
		const data = await getGeneration(context, accountability, await requestSchema(req, context), id);
		respond(res, 200, { data });
	});
	const keyed = { database: context.database, lockMs: config.leaseMs };
	mountIdempotentRoute(router, cancelGenerationRoute, keyed, (req, accountability) => {
		const { id } = parseRequest(cancelGenerationRoute, req).params;
		return {
			run: async () => {
				const providers = providerSourceFor(config, context.logger, context);
				await cancelJob({ context, database: context.database, logger: context.logger, config, providers }, accountability.user, id);
				return getGeneration(context, accountability, await requestSchema(req, context), id);
			},
			answer: (data: Record<string, unknown>) => ({ status: 200, payload: { message: `Generation ${id} was cancelled; every page it had not created is refunded.`, data } }),
		};
	});
	mountIdempotentRoute(router, retryGenerationRoute, keyed, (req, { user: userId }) => {
		const { id } = parseRequest(retryGenerationRoute, req).params;
		return {
			run: async () => {
				const pickProvider = providerPicker(context.database, providerSourceFor(config, context.logger, context));
				const retry = await retryJob({ context, database: context.database, logger: context.logger, config, pickProvider }, userId, id);
				notify();
				return retry;
			},
			answer: (retry: AcceptedJob) => ({
				status: 202,
				payload: {
					message: `Retry of ${retry.pages} failed page(s) of generation ${id} accepted; poll GET /pseo-endpoints/generations/${retry.id} for progress.`,
					generation_id: retry.id,
					status: 'pending',
				},
			}),
		};
	});
}
