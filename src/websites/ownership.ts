import type { Knex } from 'knex';
import { ForbiddenError, NotFoundError } from '../errors/index.ts';
import { readWebsite, type WebsiteRow } from './website-store.ts';

/*
 * Ownership is checked against the raw row, not through the caller's permissions: the "pSEO user" policy hides
 * other users' rows, which would turn "not yours" (403) into "does not exist" (404), and admins see everything
 * but must still get 403 on someone else's resource (operating contract section 4). Only the id and the owner
 * are read here; what the caller receives is read through services built from their accountability.
 */

export type OwnedPseo = WebsiteRow;

/** The PSEO record `pseoId` if `userId` owns it; 404 when it does not exist, 403 when it is someone else's. */
export async function requireOwnedPseo(knex: Knex, pseoId: number, userId: string): Promise<OwnedPseo> {
	const row = await readWebsite(knex, pseoId);
	if (!row) throw new NotFoundError({ resource: 'PSEO record', id: pseoId });
	if (row.backend_user_id !== userId) throw new ForbiddenError({ resource: 'PSEO record', id: pseoId });
	return row;
}
