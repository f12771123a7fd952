import type { Accountability, SchemaOverview } from '@directus/types';
import type { ServiceContext } from './services.ts';

/**
 * One row read through the items service as the caller, for a route that answers 404 for a missing row and 403
 * for someone else's. Polled often, so the usual case costs one read: the row with its owner. Only a failed read,
 * or a row that is not plainly the caller's, runs `requireOwned` on the raw table, which throws the 404 or 403
 * (the caller's permissions hide both cases alike).
 */
export async function readOwnedRow(
	context: ServiceContext,
	accountability: Accountability & { user: string },
	schema: SchemaOverview,
	target: { collection: string; id: number; fields: readonly string[] },
	requireOwned: () => Promise<void>,
): Promise<Record<string, unknown>> {
	let row: Record<string, unknown>;
	try {
		const service = new context.services.ItemsService(target.collection, { accountability, schema, knex: context.database });
		row = (await service.readOne(target.id, { fields: [...target.fields, 'user_id'] })) as Record<string, unknown>;
	} catch (error) {
		await requireOwned();
		throw error;
	}
	if (row['user_id'] !== accountability.user) await requireOwned();
	return row;
}
