import { createError } from '@directus/errors';

/** 401: no usable bearer token. */
export const UnauthorizedError = createError('PSEO_UNAUTHORIZED', 'Authentication required: send a valid Bearer token.', 401);
