import type { Request, Response, Router } from 'express';
import { expressPath, type RouteContract } from '../contracts/route-contract.ts';
import { asyncHandler } from './async-handler.ts';

/** Registers `handler` under its contract's method and path; a rejection goes to the router's error handler. */
export function mountRoute(router: Router, contract: RouteContract, handler: (req: Request, res: Response) => Promise<void>): void {
	router[contract.method](expressPath(contract), asyncHandler(handler));
}
