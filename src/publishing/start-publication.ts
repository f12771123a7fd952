import type { Knex } from 'knex';
import { ConflictError, ForbiddenError, InvalidPayloadError, NotFoundError } from '../errors/index.ts';
import { selectPostIds } from '../posts/post-publishing.ts';
import { isoFromDb, isUniqueViolation, jsonFromDb } from '../shared/database.ts';
import { readWebsite } from '../websites/website-store.ts';
import { requireOwnedPseo } from '../websites/ownership.ts';
import { hasActivePublication, insertPublication, PUBLICATIONS, PUBLICATIONS_VIEW_FIELDS, readPublicationOwner, type Schedule } from './publication-store.ts';
import type { ServiceContext } from '../shared/services.ts';
import { readOwnedRow } from '../shared/read-owned-row.ts';
import type { Accountability, SchemaOverview } from '@directus/types';
import type { PostStatus } from './publishing-target.ts';
import { readTarget } from './target-store.ts';
import { TROUBLE_FIELDS, troubleValue } from '../engine/step-failure.ts';

/** A validated body of POST /publish. */
export interface PublishRequest {
	pseoId: number;
	postIds: number[] | null;
	status: PostStatus | null;
	schedule: Schedule | null;
}

/**
 * Accepts a publication: 404/403 on the website, 409 without a target or with a publication of the website still
 * active, 400 for post ids that are not the website's. Without `post_ids` it takes every post the quality gate did
 * not fail; the run skips those the site already has in this version.
 */
export async function startPublication(database: Knex, userId: string, request: PublishRequest): Promise<number> {
	await requireOwnedPseo(database, request.pseoId, userId);
	const target = await readTarget(database, request.pseoId);
	if (!target) throw new ConflictError({ reason: `PSEO ${request.pseoId} has no publishing target; set one with PUT /pseo-endpoints/pseo/${request.pseoId}/publishing.` });
	const { ids, unknown } = await selectPostIds(database, request.pseoId, request.postIds);
	if (unknown.length > 0) throw new InvalidPayloadError({ reason: `Post(s) ${unknown.slice(0, 20).join(', ')} do not exist or belong to another website.` });
	const conflict = () => new ConflictError({ reason: `PSEO ${request.pseoId} already has a publication pending or running.` });
	if (await hasActivePublication(database, request.pseoId)) throw conflict();
	try {
		return await insertPublication(database, {
			pseoId: request.pseoId,
			userId,
			target: target.target,
			publishStatus: request.status,
			schedule: request.schedule,
			postIds: ids,
		});
	} catch (error) {
		// The unique active_pseo_id: a concurrent twin got there first.
		if (isUniqueViolation(error)) throw conflict();
		throw error;
	}
}

async function requireOwnedPublication(database: Knex, id: number, userId: string): Promise<void> {
	const owner = await readPublicationOwner(database, id);
	if (!owner) throw new NotFoundError({ resource: 'Publication', id });
	const ownerId = owner.userId ?? (await readWebsite(database, owner.pseoId))?.backend_user_id;
	if (ownerId !== userId) throw new ForbiddenError({ resource: 'Publication', id });
}

/** GET /publications/:id, read through the items service as the caller: 404 when missing, 403 when someone else's. */
export async function getPublication(
	context: ServiceContext,
	accountability: Accountability & { user: string },
	schema: SchemaOverview,
	id: number,
): Promise<Record<string, unknown>> {
	const row = await readOwnedRow(context, accountability, schema, { collection: PUBLICATIONS, id, fields: PUBLICATIONS_VIEW_FIELDS }, () =>
		requireOwnedPublication(context.database, id, accountability.user),
	);
	const view: Record<string, unknown> = {};
	for (const field of PUBLICATIONS_VIEW_FIELDS) {
		const value = row[field];
		if (field === 'failed_posts' || field === 'notices') view[field] = jsonFromDb(value, []);
		else if (TROUBLE_FIELDS.includes(field)) view[field] = troubleValue(field, value);
		else if (field.startsWith('date_')) view[field] = isoFromDb(value);
		else if (field === 'status' || field === 'target') view[field] = value;
		else view[field] = value === null || value === undefined ? value : Number(value);
	}
	return view;
}
