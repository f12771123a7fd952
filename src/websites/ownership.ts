import type { Knex } from 'knex';
import { ForbiddenError, NotFoundError } from '../errors/index.ts';

/*
 * Ownership is checked against the raw row, not through the caller's permissions: the "pSEO user" policy hides
 * other users' rows, which would turn "not yours" (403) into "does not exist" (404), and admins see everything
 * but must still get 403 on someone else's resource (operating contract section 4). Only the id and the owner
 * are read here; what the caller receives is read through services built from their accountability.
 */

export interface OwnedPseo {
	id: number;
	website_url: string;
	website_software: string;
	master_prompt: string;
	backend_user_id: string;
	post_counts_total: number;
}

/** The PSEO record `pseoId` if `userId` owns it; 404 when it does not exist, 403 when it is someone else's. */
export async function requireOwnedPseo(knex: Knex, pseoId: number, userId: string): Promise<OwnedPseo> {
	const row = (await knex('pseo')
		.where('id', pseoId)
		.first('id', 'website_url', 'website_software', 'master_prompt', 'backend_user_id', 'post_counts_total')) as
		| OwnedPseo
		| undefined;
	if (!row) throw new NotFoundError({ resource: 'PSEO record', id: pseoId });
	if (row.backend_user_id !== userId) throw new ForbiddenError({ resource: 'PSEO record', id: pseoId });
	return { ...row, id: Number(row.id), post_counts_total: Number(row.post_counts_total) };
}

/** The owner of generation `generationId`; 404 when it does not exist, 403 when it is someone else's. */
export async function requireOwnedGeneration(knex: Knex, generationId: number, userId: string): Promise<void> {
	const row = (await knex('pseo_generations as g')
		.leftJoin('pseo as p', 'p.id', 'g.pseo_id')
		.where('g.id', generationId)
		.first('g.user_id', 'p.backend_user_id')) as { user_id: string | null; backend_user_id: string | null } | undefined;
	if (!row) throw new NotFoundError({ resource: 'Generation', id: generationId });
	if ((row.user_id ?? row.backend_user_id) !== userId) throw new ForbiddenError({ resource: 'Generation', id: generationId });
}
