import type { Router } from 'express';
import manifest from '../../../package.json' with { type: 'json' };
import { openApiRoute } from '../../contracts/health.ts';
import { ROUTES } from '../../contracts/route-table.ts';
import { mountRoute } from '../../http/mount-route.ts';
import { buildOpenApi } from '../../openapi/build-openapi.ts';

/** GET /openapi.json — the OpenAPI 3.1 description of these routes, generated from their contracts; no authentication. */
export function registerOpenApi(router: Router): void {
	const document = buildOpenApi(ROUTES, manifest.version);
	mountRoute(router, openApiRoute, async (_req, res) => {
		res.status(200).json(document);
	});
}
