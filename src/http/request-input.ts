import type { Accountability } from '@directus/types';
import type { Request } from 'express';
import { UnauthorizedError } from '../errors/index.ts';

/** The caller's accountability; 401 for an anonymous request (interface section 5). */
export function requireUser(req: Request): Accountability & { user: string } {
	const accountability = (req as Request & { accountability?: Accountability | null }).accountability;
	if (!accountability?.user) throw new UnauthorizedError();
	return accountability as Accountability & { user: string };
}

/** Whether the caller is an admin of this Directus; false for an anonymous request. */
export function callerIsAdmin(req: Request): boolean {
	return (req as Request & { accountability?: Accountability | null }).accountability?.admin === true;
}
