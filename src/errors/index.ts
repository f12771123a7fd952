export { InvalidPayloadError } from './invalid-payload.ts';
export { UnauthorizedError } from './unauthorized.ts';
export { InsufficientTokensError } from './insufficient-tokens.ts';
export { SpendCapError } from './spend-cap.ts';
export { ForbiddenError } from './forbidden.ts';
export { NotFoundError } from './not-found.ts';
export { ConflictError } from './conflict.ts';
export { ProviderUnavailableError } from './provider-unavailable.ts';
export { IdempotencyKeyInUseError, IdempotencyKeyReusedError } from './idempotency.ts';
