import type { Router } from 'express';
import { useConfig } from '../../config/config.ts';
import { parseRegenerateBody, regeneratePost } from '../../jobs/regenerate-post.ts';
import { asyncHandler } from '../../http/async-handler.ts';
import { parseIdParam, requireUser } from '../../http/request-input.ts';
import { respond } from '../../http/respond.ts';
import type { ServiceContext } from '../../shared/services.ts';
import type { JobNotifier } from './triggers.ts';

/** POST /posts/:id/regenerate: a new version of one page, as an on-demand job. */
export function registerPosts(router: Router, context: ServiceContext, notify: JobNotifier): void {
	const config = useConfig(context.env);
	router.post(
		'/posts/:id/regenerate',
		asyncHandler(async (req, res) => {
			const accountability = requireUser(req);
			const id = parseIdParam(req.params['id'], 'id');
			const { instructions } = parseRegenerateBody(req.body);
			const { id: generationId } = await regeneratePost({ database: context.database, logger: context.logger, config }, accountability.user, id, instructions);
			notify();
			respond(res, 202, {
				message: `Regeneration of post ${id} accepted; poll GET /pseo-endpoints/generations/${generationId} for progress.`,
				generation_id: generationId,
				status: 'pending',
			});
		}),
	);
}
