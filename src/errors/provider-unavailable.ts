import { createError } from '@directus/errors';

export interface ProviderUnavailableExtensions {
	reason: string;
}

export const messageConstructor = ({ reason }: ProviderUnavailableExtensions) =>
	`The AI provider could not complete the request: ${reason}`;

/**
 * 502: the AI provider failed after bounded retries (or is not configured). Tokens charged for the operation
 * have been refunded when this is thrown.
 */
export const ProviderUnavailableError = createError<ProviderUnavailableExtensions>(
	'PSEO_PROVIDER_UNAVAILABLE',
	messageConstructor,
	502,
);
