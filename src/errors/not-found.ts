import { createError } from '@directus/errors';

export interface NotFoundExtensions {
	resource: string;
	id: number | string;
}

export const messageConstructor = ({ resource, id }: NotFoundExtensions) => `${resource} ${id} does not exist.`;

/** 404: no such PSEO record or generation job. */
export const NotFoundError = createError<NotFoundExtensions>('PSEO_NOT_FOUND', messageConstructor, 404);
