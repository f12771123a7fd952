import type { Router } from 'express';
import { useConfig } from '../../config/config.ts';
import { balanceRoute } from '../../contracts/balance.ts';
import { mountRoute } from '../../http/mount-route.ts';
import { requireUser } from '../../http/request-input.ts';
import { respond } from '../../http/respond.ts';
import { callerBalance } from '../../ledger/caller-balance.ts';
import type { ServiceContext } from '../../shared/services.ts';

/** GET /balance — the caller's token balance and the rates, before they trigger anything. */
export function registerBalance(router: Router, context: ServiceContext): void {
	const config = useConfig(context.env);
	mountRoute(router, balanceRoute, async (req, res) => {
		const accountability = requireUser(req);
		respond(res, 200, { data: await callerBalance(context.database, config, accountability.user) });
	});
}
