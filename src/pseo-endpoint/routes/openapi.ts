import type { Router } from 'express';
import manifest from '../../../package.json' with { type: 'json' };
import { openApiDocument } from '../../openapi/openapi-document.ts';

/** GET /openapi.json — the OpenAPI 3.1 description of these routes; no authentication. */
export function registerOpenApi(router: Router): void {
	const document = openApiDocument(manifest.version);
	router.get('/openapi.json', (_req, res) => {
		res.status(200).json(document);
	});
}
