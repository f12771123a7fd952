import type { Router } from 'express';
import { useConfig } from '../../config/config.ts';
import { cancelJob } from '../../jobs/cancel-job.ts';
import { getGeneration, listGenerations } from '../../jobs/read-jobs.ts';
import { retryJob } from '../../jobs/retry-job.ts';
import { asyncHandler } from '../../http/async-handler.ts';
import { parseIdParam, requireUser } from '../../http/request-input.ts';
import { respond } from '../../http/respond.ts';
import { providerFor } from '../../provider/create-provider.ts';
import type { ServiceContext } from '../../shared/services.ts';
import { requestSchema } from '../request-schema.ts';
import type { JobNotifier } from './triggers.ts';

/**
 * 4.6 GET /generations/:id and 4.7 GET /generations?pseo_id=X — how clients watch progress — and the job's
 * controls: POST /generations/:id/cancel and POST /generations/:id/retry.
 */
export function registerGenerations(router: Router, context: ServiceContext, notify: JobNotifier): void {
	const config = useConfig(context.env);
	router.get(
		'/generations',
		asyncHandler(async (req, res) => {
			const accountability = requireUser(req);
			const pseoId = parseIdParam(req.query['pseo_id'], 'pseo_id');
			const data = await listGenerations(context, accountability, await requestSchema(req, context), pseoId);
			respond(res, 200, { data });
		}),
	);
	router.get(
		'/generations/:id',
		asyncHandler(async (req, res) => {
			const accountability = requireUser(req);
			const id = parseIdParam(req.params['id'], 'id');
			const data = await getGeneration(context, accountability, await requestSchema(req, context), id);
			respond(res, 200, { data });
		}),
	);
	router.post(
		'/generations/:id/cancel',
		asyncHandler(async (req, res) => {
			const accountability = requireUser(req);
			const id = parseIdParam(req.params['id'], 'id');
			const provider = providerFor(config, context.logger);
			await cancelJob({ context, database: context.database, logger: context.logger, config, provider }, accountability.user, id);
			const data = await getGeneration(context, accountability, await requestSchema(req, context), id);
			respond(res, 200, { message: `Generation ${id} was cancelled; every page it had not created is refunded.`, data });
		}),
	);
	router.post(
		'/generations/:id/retry',
		asyncHandler(async (req, res) => {
			const accountability = requireUser(req);
			const id = parseIdParam(req.params['id'], 'id');
			const retry = await retryJob({ context, database: context.database, logger: context.logger, config }, accountability.user, id);
			notify();
			respond(res, 202, {
				message: `Retry of ${retry.pages} failed page(s) of generation ${id} accepted; poll GET /pseo-endpoints/generations/${retry.id} for progress.`,
				generation_id: retry.id,
				status: 'pending',
			});
		}),
	);
}
