import { createError } from '@directus/errors';

export interface ConflictExtensions {
	reason: string;
}

export const messageConstructor = ({ reason }: ConflictExtensions) => reason;

/** 409: another generation is already active (same PSEO for jobs, same user for content plans). */
export const ConflictError = createError<ConflictExtensions>('PSEO_CONFLICT', messageConstructor, 409);
