import type { Knex } from 'knex';
import type { PseoConfig } from '../config/config.ts';
import { userCapToday } from './spend-caps.ts';
import { readBalance } from './token-ledger.ts';

/** What `GET /balance` answers: the caller's balance and the prices of what they can start. */
export interface CallerBalance {
	balance: number;
	rates: { token_per_page: number; token_per_batch_page: number; token_per_main_json: number };
	/** The caller's daily cap and what is left of it today (UTC), or null without one. */
	daily_cap: { limit: number; left: number } | null;
}

/**
 * The caller's token balance with the current rates, so an API client can price a job before it triggers one.
 * Read directly: under Directus 12's Core licence a non-admin has no permission rule that would let them read
 * their own `directus_users.pseo_token_balance` through the users service.
 */
export async function callerBalance(knex: Knex, config: PseoConfig, userId: string): Promise<CallerBalance> {
	return {
		balance: await readBalance(knex, userId),
		daily_cap: await userCapToday(knex, userId, config.userDailyTokenCap),
		rates: {
			token_per_page: config.tokenPerPage,
			token_per_batch_page: config.tokenPerBatchPage,
			token_per_main_json: config.tokenPerMainJson,
		},
	};
}
