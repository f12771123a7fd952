import type { Router } from 'express';
import manifest from '../../../package.json' with { type: 'json' };
import { openApiRoute } from '../../contracts/health.ts';
import { ROUTES } from '../../contracts/route-table.ts';
import { mountRoute } from '../../http/mount-route.ts';
import { buildOpenApi } from '../../openapi/build-openapi.ts';

/**
 * GET /openapi.json — the OpenAPI 3.1 description of these routes, generated from their contracts; no authentication.
 * Built at the first request, not at start-up: converting every contract to JSON Schema took a tenth of a second of
 * each start of Directus, for a document most instances are never asked for.
 */
export function registerOpenApi(router: Router): void {
	let document: ReturnType<typeof buildOpenApi> | null = null;
	mountRoute(router, openApiRoute, async (_req, res) => {
		document ??= buildOpenApi(ROUTES, manifest.version);
		res.status(200).json(document);
	});
}
