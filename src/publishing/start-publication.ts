import type { Knex } from 'knex';
import { ConflictError, ForbiddenError, InvalidPayloadError, NotFoundError } from '../errors/index.ts';
import { selectPostIds } from '../posts/post-publishing.ts';
import { isoFromDb, isUniqueViolation, jsonFromDb, MAX_ID } from '../shared/database.ts';
import { readWebsite } from '../websites/website-store.ts';
import { requireOwnedPseo } from '../websites/ownership.ts';
import { hasActivePublication, insertPublication, PUBLICATIONS, PUBLICATIONS_VIEW_FIELDS, readPublicationOwner, type Schedule } from './publication-store.ts';
import type { ServiceContext } from '../shared/services.ts';
import { readOwnedRow } from '../shared/read-owned-row.ts';
import type { Accountability, SchemaOverview } from '@directus/types';
import { POST_STATUSES, type PostStatus } from './target-request.ts';
import { readTarget } from './target-store.ts';

/** Posts one publication may list by id. */
const MAX_POST_IDS = 10_000;
/** The most posts a schedule puts on one day. */
const MAX_PER_DAY = 1000;

export interface PublishRequest {
	pseoId: number;
	postIds: number[] | null;
	status: PostStatus | null;
	schedule: Schedule | null;
}

const fail = (reason: string): never => {
	throw new InvalidPayloadError({ reason });
};

/** The body of POST /publish: `{ pseo_id, post_ids?, status?, schedule? }`; anything else is 400. */
export function parsePublishBody(body: Record<string, unknown>, now: number = Date.now()): PublishRequest {
	const unknown = Object.keys(body).filter((key) => !['pseo_id', 'post_ids', 'status', 'schedule'].includes(key));
	if (unknown.length > 0) fail(`Unknown field(s): ${unknown.join(', ')}. Accepted: pseo_id, post_ids, status, schedule.`);
	const pseoId = body['pseo_id'];
	if (typeof pseoId !== 'number' || !Number.isSafeInteger(pseoId) || pseoId < 1 || pseoId > MAX_ID) fail(`"pseo_id" must be a positive integer of at most ${MAX_ID}.`);
	let postIds: number[] | null = null;
	if (body['post_ids'] !== undefined && body['post_ids'] !== null) {
		const ids = body['post_ids'];
		if (!Array.isArray(ids) || ids.length === 0 || ids.length > MAX_POST_IDS) fail(`"post_ids" must be an array of 1 to ${MAX_POST_IDS} post ids.`);
		for (const id of ids as unknown[]) if (typeof id !== 'number' || !Number.isSafeInteger(id) || id < 1 || id > MAX_ID) fail(`"post_ids" must hold positive integers of at most ${MAX_ID} only.`);
		postIds = [...new Set(ids as number[])];
	}
	const status = body['status'] ?? null;
	if (status !== null && !(POST_STATUSES as readonly unknown[]).includes(status)) fail(`"status" must be one of ${POST_STATUSES.join(', ')}.`);
	let schedule: Schedule | null = null;
	if (body['schedule'] !== undefined && body['schedule'] !== null) {
		if (status !== null) fail('"status" and "schedule" exclude each other: a scheduled post is a future post.');
		const raw = body['schedule'];
		if (typeof raw !== 'object' || Array.isArray(raw)) return fail('"schedule" must be an object { start, per_day }.');
		const { start, per_day: perDay, ...rest } = raw as Record<string, unknown>;
		if (Object.keys(rest).length > 0) fail(`Unknown field(s) in "schedule": ${Object.keys(rest).join(', ')}.`);
		const at = typeof start === 'string' && /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2})$/.test(start) ? Date.parse(start) : NaN;
		if (!Number.isFinite(at)) fail('"schedule.start" must be an ISO 8601 date-time with a time zone, such as 2027-01-04T09:00:00Z.');
		if (at <= now) fail('"schedule.start" must be in the future.');
		if (typeof perDay !== 'number' || !Number.isSafeInteger(perDay) || perDay < 1 || perDay > MAX_PER_DAY) fail(`"schedule.per_day" must be an integer from 1 to ${MAX_PER_DAY}.`);
		schedule = { start: new Date(at).toISOString(), per_day: perDay as number };
	}
	return { pseoId: pseoId as number, postIds, status: status as PostStatus | null, schedule };
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
	if (unknown.length > 0) fail(`Post(s) ${unknown.slice(0, 20).join(', ')} do not exist or belong to another website.`);
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
		if (field === 'failed_posts') view[field] = jsonFromDb(value, []);
		else if (field.startsWith('date_')) view[field] = isoFromDb(value);
		else if (field === 'status' || field === 'target') view[field] = value;
		else view[field] = value === null || value === undefined ? value : Number(value);
	}
	return view;
}
