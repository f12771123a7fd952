import type { Router } from 'express';
import { getGeneration, listGenerations } from '../../jobs/read-jobs.ts';
import { asyncHandler } from '../../http/async-handler.ts';
import { parseIdParam, requireUser } from '../../http/request-input.ts';
import { respond } from '../../http/respond.ts';
import type { ServiceContext } from '../../shared/services.ts';
import { requestSchema } from '../request-schema.ts';

/** 4.6 GET /generations/:id and 4.7 GET /generations?pseo_id=X — how clients watch progress. */
export function registerGenerations(router: Router, context: ServiceContext): void {
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
}
