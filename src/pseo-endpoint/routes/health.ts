import type { Router } from 'express';
import manifest from '../../../package.json' with { type: 'json' };
import { healthRoute } from '../../contracts/health.ts';
import { mountRoute } from '../../http/mount-route.ts';
import { respond } from '../../http/respond.ts';

/** The endpoints the health check lists (interface 4.1). */
export const ENDPOINTS = [
	'GET /',
	'POST /pseo',
	'POST /trigger/on-demand-generation',
	'POST /trigger/bulk-generation',
	'GET /generations/:id',
	'GET /generations?pseo_id=X',
	'POST /generations/:id/cancel',
	'POST /generations/:id/retry',
	'POST /posts/:id/regenerate',
	'POST /generate/main-json',
	'POST /plan/import',
	'GET /fetch-sitemap?pseo_id=X',
	'GET /balance',
	'PUT /pseo/:id/publishing',
	'GET /pseo/:id/publishing',
	'DELETE /pseo/:id/publishing',
	'POST /publish',
	'GET /publications/:id',
	'GET /openapi.json',
] as const;

/** 4.1 GET / — no authentication. */
export function registerHealth(router: Router): void {
	mountRoute(router, healthRoute, async (_req, res) => {
		respond(res, 200, { status: 'ok', extension: 'pseo-automation', version: manifest.version, endpoints: ENDPOINTS });
	});
}
