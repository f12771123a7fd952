import type { Router } from 'express';
import { useConfig } from '../../config/config.ts';
import { asyncHandler } from '../../http/async-handler.ts';
import { parseIdParam, requireObjectBody, requireUser } from '../../http/request-input.ts';
import { respond } from '../../http/respond.ts';
import { readPublishingTarget, removePublishingTarget, savePublishingTarget, targetView } from '../../publishing/publishing-target.ts';
import { kickPublications } from '../../publishing/publication-runtime.ts';
import { instanceSecretOf } from '../../publishing/secret-box.ts';
import { getPublication, parsePublishBody, startPublication } from '../../publishing/start-publication.ts';
import { parseTargetBody } from '../../publishing/target-request.ts';
import type { ServiceContext } from '../../shared/services.ts';
import { requestSchema } from '../request-schema.ts';

/**
 * A website's publishing target (PUT, GET, DELETE /pseo/:id/publishing), POST /publish, which sends posts to it as
 * a durable job, and GET /publications/:id, how clients watch that job.
 */
export function registerPublishing(router: Router, context: ServiceContext): void {
	const config = useConfig(context.env);
	const deps = { database: context.database, config, instanceSecret: instanceSecretOf(context.env) };
	router.put(
		'/pseo/:id/publishing',
		asyncHandler(async (req, res) => {
			const accountability = requireUser(req);
			const pseoId = parseIdParam(req.params['id'], 'id');
			const input = parseTargetBody(requireObjectBody(req));
			const row = await savePublishingTarget(deps, accountability.user, pseoId, input);
			respond(res, 200, { message: `Publishing target of PSEO ${pseoId} saved.`, data: targetView(row) });
		}),
	);
	router.get(
		'/pseo/:id/publishing',
		asyncHandler(async (req, res) => {
			const accountability = requireUser(req);
			const pseoId = parseIdParam(req.params['id'], 'id');
			respond(res, 200, { data: targetView(await readPublishingTarget(deps, accountability.user, pseoId)) });
		}),
	);
	router.delete(
		'/pseo/:id/publishing',
		asyncHandler(async (req, res) => {
			const accountability = requireUser(req);
			const pseoId = parseIdParam(req.params['id'], 'id');
			await removePublishingTarget(deps, accountability.user, pseoId);
			respond(res, 200, { message: `Publishing target of PSEO ${pseoId} removed.` });
		}),
	);
	router.post(
		'/publish',
		asyncHandler(async (req, res) => {
			const accountability = requireUser(req);
			const request = parsePublishBody(requireObjectBody(req));
			const id = await startPublication(context.database, accountability.user, request);
			kickPublications();
			respond(res, 202, {
				message: `Publication accepted; poll GET /pseo-endpoints/publications/${id} for progress.`,
				publication_id: id,
				status: 'pending',
			});
		}),
	);
	router.get(
		'/publications/:id',
		asyncHandler(async (req, res) => {
			const accountability = requireUser(req);
			const id = parseIdParam(req.params['id'], 'id');
			respond(res, 200, { data: await getPublication(context, accountability, await requestSchema(req, context), id) });
		}),
	);
}
