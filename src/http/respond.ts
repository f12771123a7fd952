import type { Response } from 'express';

/** A success body of the interface's envelope (section 2.4): `success`, `timestamp`, and the payload. */
export function successBody(payload: Record<string, unknown>): Record<string, unknown> {
	return { success: true, ...payload, timestamp: new Date().toISOString() };
}

/** Writes a success body of the interface's envelope (section 2.4). */
export function respond(res: Response, status: number, payload: Record<string, unknown>): void {
	res.status(status).json(successBody(payload));
}
