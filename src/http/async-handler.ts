import type { NextFunction, Request, RequestHandler, Response } from 'express';

/** Express 4 ignores rejected promises; this sends them to the router's error handler. */
export const asyncHandler =
	(handler: (req: Request, res: Response, next: NextFunction) => Promise<unknown>): RequestHandler =>
	(req, res, next) => {
		handler(req, res, next).catch(next);
	};
