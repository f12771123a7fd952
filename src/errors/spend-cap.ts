import { createError } from '@directus/errors';

export interface SpendCapExtensions {
	/** Whose cap: the website's `daily_token_cap` or the instance's PSEO_USER_DAILY_TOKEN_CAP. */
	cap: 'website' | 'user';
	limit: number;
	/** Tokens still allowed today (UTC). */
	left: number;
	required: number;
}

const messageConstructor = ({ cap, limit, left, required }: SpendCapExtensions) =>
	`Daily spend cap reached: this operation costs ${required} tokens, and the ${
		cap === 'website' ? "website's daily_token_cap" : 'per-user daily cap (PSEO_USER_DAILY_TOKEN_CAP)'
	} of ${limit} tokens leaves ${left} for today (UTC).`;

/** 402: the operation would take today's spending past a cap, although the balance might cover it. */
export const SpendCapError = createError<SpendCapExtensions>('PSEO_SPEND_CAP', messageConstructor, 402);
