import type { Router } from 'express';
import { useConfig } from '../../config/config.ts';
import { providersRoute } from '../../contracts/providers.ts';
import { mountRoute } from '../../http/mount-route.ts';
import { requireUser } from '../../http/request-input.ts';
import { respond } from '../../http/respond.ts';
import { providerSourceFor } from '../../provider/create-provider.ts';
import type { ServiceContext } from '../../shared/services.ts';

/** GET /providers — what a website may name as its provider and model, for the app's pickers and API clients. */
export function registerProviders(router: Router, context: ServiceContext): void {
	const config = useConfig(context.env);
	mountRoute(router, providersRoute, async (req, res) => {
		requireUser(req);
		respond(res, 200, { data: await providerSourceFor(config, context.logger, context).catalog() });
	});
}
