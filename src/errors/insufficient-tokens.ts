import { createError } from '@directus/errors';

export interface InsufficientTokensExtensions {
	required: number;
	balance: number;
}

export const messageConstructor = ({ required, balance }: InsufficientTokensExtensions) =>
	`Insufficient token balance: this operation costs ${required} tokens and the balance is ${balance}.`;

/** 402: the caller's token balance does not cover the operation. */
export const InsufficientTokensError = createError<InsufficientTokensExtensions>(
	'PSEO_INSUFFICIENT_TOKENS',
	messageConstructor,
	402,
);
