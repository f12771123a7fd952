import type { SchemaOverview } from '@directus/types';
import type { Request } from 'express';
import type { ServiceContext } from '../shared/services.ts';

/** The schema Directus attached to the request, or a fresh one when it did not. */
export async function requestSchema(req: Request, context: ServiceContext): Promise<SchemaOverview> {
	return (req as Request & { schema?: SchemaOverview }).schema ?? (await context.getSchema());
}
