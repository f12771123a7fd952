import type { Router } from 'express';
import { useConfig } from '../../config/config.ts';
import { regeneratePostRoute } from '../../contracts/generations.ts';
import { regeneratePost } from '../../jobs/regenerate-post.ts';
import { mountRoute } from '../../http/mount-route.ts';
import { parseRequest } from '../../http/parse-request.ts';
import { requireUser } from '../../http/request-input.ts';
import { respond } from '../../http/respond.ts';
import type { ServiceContext } from '../../shared/services.ts';
import type { JobNotifier } from './triggers.ts';

/** POST /posts/:id/regenerate: a new version of one page, as an on-demand job. */
export function registerPosts(router: Router, context: ServiceContext, notify: JobNotifier): void {
	const config = useConfig(context.env);
	mountRoute(router, regeneratePostRoute, async (req, res) => {
		const accountability = requireUser(req);
		const { params, body } = parseRequest(regeneratePostRoute, req);
		const { id } = params;
		const { id: generationId } = await regeneratePost({ database: context.database, logger: context.logger, config }, accountability.user, id, body.instructions);
		notify();
		respond(res, 202, {
			message: `Regeneration of post ${id} accepted; poll GET /pseo-endpoints/generations/${generationId} for progress.`,
			generation_id: generationId,
			status: 'pending',
		});
	});
}
