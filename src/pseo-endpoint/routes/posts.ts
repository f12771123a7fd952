import type { Router } from 'express';
import { useConfig } from '../../config/config.ts';
import { regeneratePostRoute } from '../../contracts/generations.ts';
import { regeneratePost } from '../../jobs/regenerate-post.ts';
import { providerPicker } from '../../websites/website-provider.ts';
import { providerSourceFor } from '../../provider/create-provider.ts';
import type { AcceptedJob } from '../../jobs/start-job.ts';
import { mountIdempotentRoute } from '../../http/mount-route.ts';
import { parseRequest } from '../../http/parse-request.ts';
import type { ServiceContext } from '../../shared/services.ts';
import type { JobNotifier } from './triggers.ts';

/** POST /posts/:id/regenerate: a new version of one page, as an on-demand job. */
export function registerPosts(router: Router, context: ServiceContext, notify: JobNotifier): void {
	const config = useConfig(context.env);
	mountIdempotentRoute(router, regeneratePostRoute, { database: context.database, lockMs: config.leaseMs }, (req, { user: userId }) => {
		const { params, body } = parseRequest(regeneratePostRoute, req);
		const { id } = params;
		return {
			run: async () => {
				const pickProvider = providerPicker(context.database, providerSourceFor(config, context.logger, context));
				const accepted = await regeneratePost({ database: context.database, logger: context.logger, config, pickProvider }, userId, id, body.instructions);
				notify();
				return accepted;
			},
			answer: ({ id: generationId }: AcceptedJob) => ({
				status: 202,
				payload: { message: `Regeneration of post ${id} accepted; poll GET /pseo-endpoints/generations/${generationId} for progress.`, generation_id: generationId, status: 'pending' },
			}),
		};
	});
}
