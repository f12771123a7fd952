import type { Router } from 'express';
import { createWebsiteRoute } from '../../contracts/websites.ts';
import { mountRoute } from '../../http/mount-route.ts';
import { parseRequest } from '../../http/parse-request.ts';
import { requireUser } from '../../http/request-input.ts';
import { respond } from '../../http/respond.ts';
import type { ServiceContext } from '../../shared/services.ts';
import { createWebsite } from '../../websites/create-website.ts';
import { requestSchema } from '../request-schema.ts';

/** 4.3 POST /pseo — register a website. */
export function registerWebsites(router: Router, context: ServiceContext): void {
	mountRoute(router, createWebsiteRoute, async (req, res) => {
		const accountability = requireUser(req);
		const { body } = parseRequest(createWebsiteRoute, req);
		const data = await createWebsite(context, accountability, await requestSchema(req, context), body);
		respond(res, 201, { message: 'Website registered.', data });
	});
}
