import type { Router } from 'express';
import manifest from '../../../package.json' with { type: 'json' };
import { healthRoute } from '../../contracts/health.ts';
import { mountRoute } from '../../http/mount-route.ts';
import { respond } from '../../http/respond.ts';
import { callerIsAdmin } from '../../http/request-input.ts';
import { countJobsNeedingAttention } from '../../engine/job-store.ts';
import type { ServiceContext } from '../../shared/services.ts';

/** The endpoints the health check lists (interface 4.1). */
export const ENDPOINTS = [
	'GET /',
	'POST /pseo',
	'POST /trigger/on-demand-generation',
	'POST /trigger/bulk-generation',
	'POST /trigger/refresh-generation',
	'GET /generations/:id',
	'GET /generations?pseo_id=X',
	'POST /generations/:id/cancel',
	'POST /generations/:id/retry',
	'POST /posts/:id/regenerate',
	'POST /generate/main-json',
	'POST /plan/import',
	'GET /fetch-sitemap?pseo_id=X',
	'GET /balance',
	'GET /providers',
	'PUT /pseo/:id/publishing',
	'GET /pseo/:id/publishing',
	'DELETE /pseo/:id/publishing',
	'POST /publish',
	'GET /publications/:id',
	'GET /openapi.json',
	'GET /metrics',
] as const;

/** 4.1 GET / — no authentication; an admin's token adds what needs an operator. */
export function registerHealth(router: Router, context: ServiceContext): void {
	mountRoute(router, healthRoute, async (req, res) => {
		const health = { status: 'ok', extension: 'pseo-automation', version: manifest.version, endpoints: ENDPOINTS };
		if (!callerIsAdmin(req)) return respond(res, 200, health);
		respond(res, 200, { ...health, jobs_needing_attention: await countJobsNeedingAttention(context.database) });
	});
}
