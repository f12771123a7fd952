import type { Accountability, SchemaOverview } from '@directus/types';
import { JOBS, readJobOwner } from '../engine/job-store.ts';
import { kindOf, type FailedRoute } from '../engine/job-types.ts';
import { ForbiddenError, NotFoundError } from '../errors/index.ts';
import { isoFromDb } from '../shared/database.ts';
import { failedRoutesOf } from '../engine/job-route-store.ts';
import { TROUBLE_FIELDS, troubleValue } from '../engine/step-failure.ts';
import type { ServiceContext } from '../shared/services.ts';
import { readOwnedRow } from '../shared/read-owned-row.ts';
import { requireOwnedPseo } from '../websites/ownership.ts';
import { readWebsite } from '../websites/website-store.ts';

/**
 * The fields of interface 2.2, in its order, then the job's trouble (engine/step-failure.ts); `failed_routes` come
 * from the job's route rows.
 */
const INTERFACE_FIELDS = ['id', 'pseo_id', 'status', 'requested_count', 'created_count', 'failed_count', 'failed_routes', 'date_created', 'date_completed'];
/** The provider and model a job runs with; null for a job accepted before jobs recorded them. */
const PROVIDER_FIELDS = ['provider', 'model'];
/**
 * What started the job (engine/job-types.ts `kindOf`): read with the columns it is derived from for a job stored before
 * jobs recorded it.
 */
const KIND_FIELDS = ['kind'];
const LIST_FIELDS = [...INTERFACE_FIELDS, ...KIND_FIELDS, ...TROUBLE_FIELDS, ...PROVIDER_FIELDS];
const RECORD_FIELDS = [...INTERFACE_FIELDS.slice(0, 8), 'date_updated', 'date_completed', ...KIND_FIELDS, ...TROUBLE_FIELDS, ...PROVIDER_FIELDS];
const stored = (fields: string[]) => [...fields.filter((field) => field !== 'failed_routes'), 'mode', 'regenerate_post_id'];
const USAGE_FIELDS = ['usage_prompt_tokens', 'usage_completion_tokens', 'usage_requests'];

/** What the job cost at the provider so far, as the provider reported it. */
function usageOf(row: Record<string, unknown>): { prompt_tokens: number; completion_tokens: number; requests: number } {
	const count = (field: string) => Number(row[field] ?? 0);
	return { prompt_tokens: count('usage_prompt_tokens'), completion_tokens: count('usage_completion_tokens'), requests: count('usage_requests') };
}

/** The interface's generation record (section 2.2), from a row read through the items service and its failed routes. */
function toRecord(row: Record<string, unknown>, fields: string[], failed: FailedRoute[]): Record<string, unknown> {
	const record: Record<string, unknown> = {};
	for (const field of fields) {
		const value = row[field];
		if (field === 'failed_routes') record[field] = failed;
		else if (field === 'kind') record[field] = kindOf(row);
		else if (TROUBLE_FIELDS.includes(field)) record[field] = troubleValue(field, value);
		else if (field.startsWith('date_')) record[field] = isoFromDb(value);
		else if (field === 'status' || PROVIDER_FIELDS.includes(field)) record[field] = value ?? null;
		else record[field] = value === null || value === undefined ? value : Number(value);
	}
	return record;
}

/**
 * The failed routes of the jobs of `rows`, read only for the jobs that count any: a job is polled every second or
 * so while it runs, and most never fail a page, so the usual poll costs no read of the route rows.
 */
async function failedRoutesOfJobs(context: ServiceContext, rows: readonly Record<string, unknown>[]): Promise<Map<number, FailedRoute[]>> {
	const failing = rows.filter((row) => Number(row['failed_count'] ?? 0) > 0).map((row) => Number(row['id']));
	return failing.length > 0 ? failedRoutesOf(context.database, failing) : new Map();
}

function itemsService(context: ServiceContext, accountability: Accountability, schema: SchemaOverview) {
	return new context.services.ItemsService(JOBS, { accountability, schema, knex: context.database });
}

/**
 * The owner check of a job, on the raw row (see websites/ownership.ts for why): 404 when it does not exist, 403
 * when it is someone else's. A job without `user_id` (written before that column existed) belongs to its website's
 * owner.
 */
export async function requireOwnedGeneration(context: ServiceContext, generationId: number, userId: string): Promise<void> {
	const owner = await readJobOwner(context.database, generationId);
	if (!owner) throw new NotFoundError({ resource: 'Generation', id: generationId });
	const ownerId = owner.userId ?? (await readWebsite(context.database, owner.pseoId))?.backend_user_id;
	if (ownerId !== userId) throw new ForbiddenError({ resource: 'Generation', id: generationId });
}

/** 4.6: one job of the caller, every field of interface 2.2. */
export async function getGeneration(
	context: ServiceContext,
	accountability: Accountability & { user: string },
	schema: SchemaOverview,
	id: number,
): Promise<Record<string, unknown>> {
	const row = await readOwnedRow(context, accountability, schema, { collection: JOBS, id, fields: [...stored(RECORD_FIELDS), ...USAGE_FIELDS] }, () =>
		requireOwnedGeneration(context, id, accountability.user),
	);
	const failed = await failedRoutesOfJobs(context, [row]);
	return { ...toRecord(row, RECORD_FIELDS, failed.get(id) ?? []), usage: usageOf(row) };
}

/** 4.7: the caller's 50 newest jobs of a website, newest first. */
export async function listGenerations(
	context: ServiceContext,
	accountability: Accountability & { user: string },
	schema: SchemaOverview,
	pseoId: number,
): Promise<Record<string, unknown>[]> {
	await requireOwnedPseo(context.database, pseoId, accountability.user);
	const rows = (await itemsService(context, accountability, schema).readByQuery({
		filter: { _and: [{ pseo_id: { _eq: pseoId } }, { user_id: { _eq: accountability.user } }] },
		sort: ['-date_created', '-id'],
		limit: 50,
		fields: stored(LIST_FIELDS),
	})) as Record<string, unknown>[];
	const failed = await failedRoutesOfJobs(context, rows);
	return rows.map((row) => toRecord(row, LIST_FIELDS, failed.get(Number(row['id'])) ?? []));
}
