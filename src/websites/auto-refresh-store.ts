import type { Knex } from 'knex';
import { jsonFromDb, jsonParameter } from '../shared/database.ts';
import { POSTS } from '../posts/post-store.ts';
import { WEBSITES } from './website-store.ts';

/*
 * Websites that refresh their stale posts by themselves (`pseo.auto_refresh`): which are due, the claim that makes
 * one instance start the refresh (`auto_refresh_next`, epoch ms, moved an interval ahead by a conditional UPDATE,
 * as leases are taken), and what became of it (`auto_refresh_state`, readable through the items API).
 */

/** `pseo.auto_refresh_state`. */
export interface AutoRefreshState {
	/** When the last refresh job was started (ISO), its id and pages. */
	last_started_at: string | null;
	last_job_id: number | null;
	last_pages: number | null;
	/** The last time one was due but could not start, and why (a job running, a short balance, a cap); null after one started. */
	deferred_at: string | null;
	deferred_reason: string | null;
	/** No refresh job starts before this (ISO). */
	next_at: string | null;
}

/**
 * Websites with `auto_refresh` on whose interval has passed and that have a stale post (not retired), with their
 * owner: the ones without are not among the `limit`, so they never keep the others waiting.
 */
export async function findAutoRefreshCandidates(knex: Knex, now: number, limit: number): Promise<{ pseoId: number; ownerId: string }[]> {
	const rows = (await knex(WEBSITES)
		.where('auto_refresh', true)
		.andWhere((query) => query.whereNull('auto_refresh_next').orWhere('auto_refresh_next', '<=', now))
		.whereExists(function stale() {
			this.select(knex.raw('1')).from(POSTS).whereRaw(`${POSTS}.pseo_id = ${WEBSITES}.id`).andWhere({ stale: true, retired: false });
		})
		.orderBy('id')
		.limit(limit)
		.select('id', 'backend_user_id')) as { id: number; backend_user_id: string }[];
	return rows.map((row) => ({ pseoId: Number(row.id), ownerId: row.backend_user_id }));
}

/** Takes the website's turn: true for the one instance whose UPDATE moved `auto_refresh_next` to `next`. */
export async function claimAutoRefresh(knex: Knex, pseoId: number, now: number, next: number): Promise<boolean> {
	const claimed = await knex(WEBSITES)
		.where('id', pseoId)
		.andWhere('auto_refresh', true)
		.andWhere((query) => query.whereNull('auto_refresh_next').orWhere('auto_refresh_next', '<=', now))
		.update({ auto_refresh_next: next });
	return claimed === 1;
}

/** The website's recorded turn, or null before its first. */
export async function readAutoRefreshState(knex: Knex, pseoId: number): Promise<Partial<AutoRefreshState> | null> {
	const row = (await knex(WEBSITES).where('id', pseoId).first('auto_refresh_state')) as { auto_refresh_state: unknown } | undefined;
	return jsonFromDb<Partial<AutoRefreshState> | null>(row?.auto_refresh_state, null);
}

/** Records what the website's turn gave. */
export async function recordAutoRefresh(knex: Knex, pseoId: number, state: AutoRefreshState): Promise<void> {
	await knex(WEBSITES).where('id', pseoId).update({ auto_refresh_state: jsonParameter(state) });
}
