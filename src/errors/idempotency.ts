import { createError } from '@directus/errors';

export interface IdempotencyKeyExtensions {
	key: string;
}

export const reusedMessage = ({ key }: IdempotencyKeyExtensions) =>
	`Idempotency-Key "${key}" was already used for a request with another body on this route; send a new key for a new request.`;

/** 422: a key sent again with a different request (IETF draft "The Idempotency-Key HTTP Header Field", section 2.7). */
export const IdempotencyKeyReusedError = createError<IdempotencyKeyExtensions>('PSEO_IDEMPOTENCY_KEY_REUSED', reusedMessage, 422);

export const inUseMessage = ({ key }: IdempotencyKeyExtensions) =>
	`A request with Idempotency-Key "${key}" is still being processed; retry once it has answered.`;

/** 409: a key sent again while its first request is still running. */
export const IdempotencyKeyInUseError = createError<IdempotencyKeyExtensions>('PSEO_IDEMPOTENCY_KEY_IN_USE', inUseMessage, 409);
