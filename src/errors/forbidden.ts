import { createError } from '@directus/errors';

export interface ForbiddenExtensions {
	resource: string;
	id: number | string;
}

export const messageConstructor = ({ resource, id }: ForbiddenExtensions) =>
	`You do not own ${resource} ${id}.`;

/** 403: the resource exists but belongs to another user. */
export const ForbiddenError = createError<ForbiddenExtensions>('PSEO_FORBIDDEN', messageConstructor, 403);
