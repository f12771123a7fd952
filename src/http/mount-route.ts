import type { Request, Response, Router } from 'express';
import type { Accountability } from '@directus/types';
import type { Knex } from 'knex';
import { expressPath, type RouteContract } from '../contracts/route-contract.ts';
import { idempotencyKeyOf, requestHash, runIdempotent, type IdempotentWork } from '../idempotency/idempotent-request.ts';
import { asyncHandler } from './async-handler.ts';
import { requireUser } from './request-input.ts';
import { successBody } from './respond.ts';

/** Registers `handler` under its contract's method and path; a rejection goes to the router's error handler. */
export function mountRoute(router: Router, contract: RouteContract, handler: (req: Request, res: Response) => Promise<void>): void {
	router[contract.method](expressPath(contract), asyncHandler(handler));
}

export interface IdempotentRouteOptions {
	database: Knex;
	/** How long a first request holds its key before it is presumed dead (renewed while it runs). */
	lockMs: number;
}

/**
 * Registers a POST that creates or charges, safe to retry with an `Idempotency-Key` header (idempotency/): `prepare`
 * checks the caller and the request (a refusal there is never stored) and returns the work and its answer.
 */
export function mountIdempotentRoute<O>(
	router: Router,
	contract: RouteContract,
	options: IdempotentRouteOptions,
	prepare: (req: Request, accountability: Accountability & { user: string }) => IdempotentWork<O>,
): void {
	mountRoute(router, contract, async (req, res) => {
		const accountability = requireUser(req);
		const key = idempotencyKeyOf(req.headers['idempotency-key']);
		const work = prepare(req, accountability);
		const where = key ? { userId: accountability.user, scope: `${req.method} ${req.path}`, key } : null;
		const sent = await runIdempotent({ knex: options.database, where, hash: requestHash(req.body), lockMs: options.lockMs, envelope: successBody }, work);
		if (sent.replayed) res.setHeader('Idempotent-Replayed', 'true');
		res.status(sent.status).json(sent.body);
	});
}
