import type { Knex } from 'knex';

/*
 * The owner of `pseo`, the website (PSEO) records. Requests create and read websites through Directus's items
 * service with the caller's accountability (create-website.ts); the raw reads here serve the ownership check,
 * which must see rows the caller's permissions hide, and the engine, which has no request behind it.
 */

export const WEBSITES = 'pseo';

export interface WebsiteRow {
	id: number;
	website_url: string;
	website_software: string;
	master_prompt: string;
	backend_user_id: string;
	post_counts_total: number;
	/** How a published page shows its facts: `table` (the default) or `none`. */
	facts_display: 'table' | 'none';
}

/** The website `pseoId`, or null when it does not exist. */
export async function readWebsite(knex: Knex, pseoId: number): Promise<WebsiteRow | null> {
	const row = (await knex(WEBSITES)
		.where('id', pseoId)
		.first('id', 'website_url', 'website_software', 'master_prompt', 'backend_user_id', 'post_counts_total', 'facts_display')) as
		| (Omit<WebsiteRow, 'facts_display'> & { facts_display: string | null })
		| undefined;
	if (!row) return null;
	return { ...row, id: Number(row.id), post_counts_total: Number(row.post_counts_total), facts_display: row.facts_display === 'none' ? 'none' : 'table' };
}

/** The website's `daily_token_cap`, or null when it has none. */
export async function readDailyTokenCap(knex: Knex, pseoId: number): Promise<number | null> {
	const row = (await knex(WEBSITES).where('id', pseoId).first('daily_token_cap')) as { daily_token_cap: unknown } | undefined;
	const cap = row?.daily_token_cap;
	return cap === null || cap === undefined ? null : Number(cap);
}

/** Adds `created` to the website's post counter, inside the transaction that stored those posts. */
export async function addPostCount(trx: Knex.Transaction, pseoId: number, created: number): Promise<void> {
	await trx(WEBSITES).where('id', pseoId).update({ post_counts_total: trx.raw('post_counts_total + ?', [created]) });
}

/** The provider and model the website names for its plans and pages; null where it leaves them to the instance. */
export async function readWebsiteProvider(knex: Knex, pseoId: number): Promise<{ provider: string | null; model: string | null }> {
	const row = (await knex(WEBSITES).where('id', pseoId).first('provider', 'model')) as { provider: string | null; model: string | null } | undefined;
	return { provider: row?.provider ?? null, model: row?.model ?? null };
}
