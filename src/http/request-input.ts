import type { Accountability } from '@directus/types';
import type { Request } from 'express';
import { InvalidPayloadError, UnauthorizedError } from '../errors/index.ts';
import { MAX_ID } from '../shared/database.ts';

/** The caller's accountability; 401 for an anonymous request (interface section 5). */
export function requireUser(req: Request): Accountability & { user: string } {
	const accountability = (req as Request & { accountability?: Accountability | null }).accountability;
	if (!accountability?.user) throw new UnauthorizedError();
	return accountability as Accountability & { user: string };
}

/** The JSON body as an object; 400 when it is missing or not an object. */
export function requireObjectBody(req: Request): Record<string, unknown> {
	const body: unknown = req.body;
	if (typeof body !== 'object' || body === null || Array.isArray(body)) {
		throw new InvalidPayloadError({ reason: 'The request body must be a JSON object.' });
	}
	return body as Record<string, unknown>;
}

const DIGITS = /^[1-9]\d*$/;

/**
 * Parses an identifier from a path or query string. Only a plain positive integer is accepted: `1.0`, `01`,
 * `1e3`, `-1`, `abc`, repeated parameters and values beyond the largest id ({@link MAX_ID}) are all 400 (operating
 * contract section 4).
 */
export function parseIdParam(value: unknown, name: string): number {
	if (value === undefined || value === '') {
		throw new InvalidPayloadError({ reason: `Query or path parameter "${name}" is required.` });
	}
	if (typeof value !== 'string' || !DIGITS.test(value) || !Number.isSafeInteger(Number(value))) {
		throw new InvalidPayloadError({ reason: `"${name}" must be a positive integer.` });
	}
	if (Number(value) > MAX_ID) throw new InvalidPayloadError({ reason: `"${name}" must be at most ${MAX_ID}.` });
	return Number(value);
}

/** A body field that must be a JSON number holding a positive integer. */
export function requirePositiveInteger(body: Record<string, unknown>, name: string, max = Number.MAX_SAFE_INTEGER): number {
	const value = body[name];
	if (value === undefined || value === null) {
		throw new InvalidPayloadError({ reason: `"${name}" is required.` });
	}
	if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 1) {
		throw new InvalidPayloadError({ reason: `"${name}" must be a positive integer, received ${JSON.stringify(value)}.` });
	}
	if (value > max) throw new InvalidPayloadError({ reason: `"${name}" must be at most ${max}, received ${value}.` });
	return value;
}
