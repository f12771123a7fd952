import type { Response } from 'express';

/** Writes a success body of the interface's envelope (section 2.4): `success`, `timestamp`, and the payload. */
export function respond(res: Response, status: number, payload: Record<string, unknown>): void {
	res.status(status).json({ success: true, ...payload, timestamp: new Date().toISOString() });
}
