import type { Router } from 'express';
import { useConfig } from '../../config/config.ts';
import {
	deletePublishingTargetRoute,
	getPublicationRoute,
	getPublishingTargetRoute,
	publishRoute,
	savePublishingTargetRoute,
} from '../../contracts/publishing.ts';
import { mountIdempotentRoute, mountRoute } from '../../http/mount-route.ts';
import { parseRequest } from '../../http/parse-request.ts';
import { requireUser } from '../../http/request-input.ts';
import { respond } from '../../http/respond.ts';
import { readPublishingTarget, removePublishingTarget, savePublishingTarget, targetView } from '../../publishing/publishing-target.ts';
import { kickPublications } from '../../publishing/publication-runtime.ts';
import { instanceSecretOf } from '../../publishing/secret-box.ts';
import { getPublication, startPublication } from '../../publishing/start-publication.ts';
import type { ServiceContext } from '../../shared/services.ts';
import { requestSchema } from '../request-schema.ts';

/**
 * A website's publishing target (PUT, GET, DELETE /pseo/:id/publishing), POST /publish, which sends posts to it as
 * a durable job, and GET /publications/:id, how clients watch that job.
 */
export function registerPublishing(router: Router, context: ServiceContext): void {
	const config = useConfig(context.env);
	const deps = { database: context.database, config, instanceSecret: instanceSecretOf(context.env) };
	mountRoute(router, savePublishingTargetRoute, async (req, res) => {
		const accountability = requireUser(req);
		const { params, body } = parseRequest(savePublishingTargetRoute, req);
		const row = await savePublishingTarget(deps, accountability.user, params.id, body);
		respond(res, 200, { message: `Publishing target of PSEO ${params.id} saved.`, data: targetView(row) });
	});
	mountRoute(router, getPublishingTargetRoute, async (req, res) => {
		const accountability = requireUser(req);
		const { id: pseoId } = parseRequest(getPublishingTargetRoute, req).params;
		respond(res, 200, { data: targetView(await readPublishingTarget(deps, accountability.user, pseoId)) });
	});
	mountRoute(router, deletePublishingTargetRoute, async (req, res) => {
		const accountability = requireUser(req);
		const { id: pseoId } = parseRequest(deletePublishingTargetRoute, req).params;
		await removePublishingTarget(deps, accountability.user, pseoId);
		respond(res, 200, { message: `Publishing target of PSEO ${pseoId} removed.` });
	});
	mountIdempotentRoute(router, publishRoute, { database: context.database, lockMs: useConfig(context.env).leaseMs }, (req, { user: userId }) => {
		const { body } = parseRequest(publishRoute, req);
		return {
			run: async () => {
				const id = await startPublication(context.database, userId, body);
				kickPublications();
				return id;
			},
			answer: (id: number) => ({
				status: 202,
				payload: { message: `Publication accepted; poll GET /pseo-endpoints/publications/${id} for progress.`, publication_id: id, status: 'pending' },
			}),
		};
	});
	mountRoute(router, getPublicationRoute, async (req, res) => {
		const accountability = requireUser(req);
		const { id } = parseRequest(getPublicationRoute, req).params;
		respond(res, 200, { data: await getPublication(context, accountability, await requestSchema(req, context), id) });
	});
}
