import type { Router } from 'express';
import { asyncHandler } from '../../http/async-handler.ts';
import { requireObjectBody, requireUser } from '../../http/request-input.ts';
import { respond } from '../../http/respond.ts';
import type { ServiceContext } from '../../shared/services.ts';
import { createWebsite } from '../../websites/create-website.ts';
import { parseNewWebsite } from '../../websites/website-request.ts';
import { requestSchema } from '../request-schema.ts';

/** 4.3 POST /pseo — register a website. */
export function registerWebsites(router: Router, context: ServiceContext): void {
	router.post(
		'/pseo',
		asyncHandler(async (req, res) => {
			const accountability = requireUser(req);
			const website = parseNewWebsite(requireObjectBody(req));
			const data = await createWebsite(context, accountability, await requestSchema(req, context), website);
			respond(res, 201, { message: 'Website registered.', data });
		}),
	);
}
