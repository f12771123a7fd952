import { createError } from '@directus/errors';

export interface InvalidPayloadExtensions {
	reason: string;
}

export const messageConstructor = ({ reason }: InvalidPayloadExtensions) => reason;

/** 400: a request parameter is missing, of the wrong type, or out of range. */
export const InvalidPayloadError = createError<InvalidPayloadExtensions>('PSEO_INVALID_PAYLOAD', messageConstructor, 400);
