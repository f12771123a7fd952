import type { Knex } from 'knex';
import { dbTimestamp, isUniqueViolation } from '../shared/database.ts';

/*
 * The owner of `pseo_publishing_targets`: where each website publishes, one row per website (unique pseo_id).
 * The secret is stored sealed (secret-box.ts); nothing here ever sees it in plain text. The collection is not
 * granted to the pSEO policy, so the items API never serves it to a non-admin: the routes under
 * /pseo/:id/publishing are the only way in, and they never return the secret.
 */

const TARGETS = 'pseo_publishing_targets';

export type TargetKind = 'wordpress' | 'webhook';

export interface TargetRow {
	pseoId: number;
	userId: string | null;
	target: TargetKind;
	url: string;
	username: string | null;
	defaultStatus: string | null;
	sealedSecret: string;
	dateCreated: unknown;
	dateUpdated: unknown;
}

export async function readTarget(knex: Knex, pseoId: number): Promise<TargetRow | null> {
	const row = (await knex(TARGETS).where('pseo_id', pseoId).first()) as Record<string, unknown> | undefined;
	if (!row) return null;
	return {
		pseoId: Number(row['pseo_id']),
		userId: (row['user_id'] as string | null) ?? null,
		target: row['target'] as TargetKind,
		url: String(row['url']),
		username: (row['username'] as string | null) ?? null,
		defaultStatus: (row['default_status'] as string | null) ?? null,
		sealedSecret: String(row['secret_ciphertext']),
		dateCreated: row['date_created'],
		dateUpdated: row['date_updated'],
	};
}

/** Creates or replaces the website's target (a concurrent first save of the same website updates instead). */
export async function saveTarget(knex: Knex, row: Omit<TargetRow, 'dateCreated' | 'dateUpdated'>): Promise<void> {
	const now = dbTimestamp(knex);
	const fields = {
		user_id: row.userId,
		target: row.target,
		url: row.url,
		username: row.username,
		default_status: row.defaultStatus,
		secret_ciphertext: row.sealedSecret,
		date_updated: now,
	};
	const update = () => knex(TARGETS).where('pseo_id', row.pseoId).update(fields);
	if ((await update()) > 0) return;
	try {
		await knex(TARGETS).insert({ ...fields, pseo_id: row.pseoId, date_created: now });
	} catch (error) {
		if (!isUniqueViolation(error)) throw error;
		await update();
	}
}

/** Removes the website's target; false when it had none. */
export async function deleteTarget(knex: Knex, pseoId: number): Promise<boolean> {
	return (await knex(TARGETS).where('pseo_id', pseoId).delete()) > 0;
}
