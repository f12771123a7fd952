import { timingSafeEqual } from 'node:crypto';
import type { Request, Router } from 'express';
import { useConfig } from '../../config/config.ts';
import { metricsRoute } from '../../contracts/health.ts';
import { jobFigures } from '../../engine/job-figures.ts';
import { MetricsAccessError } from '../../errors/index.ts';
import { mountRoute } from '../../http/mount-route.ts';
import { requireUser } from '../../http/request-input.ts';
import { metricsRegistry, setDatabaseFigures } from '../../metrics/metrics.ts';
import type { ServiceContext } from '../../shared/services.ts';

/**
 * GET /metrics — the Prometheus text format, for admins or the monitoring user whose static token is
 * PSEO_METRICS_TOKEN. Directus authenticates the token first (it knows every static token), so the check here is
 * only who it is: an admin, or that very token.
 */
export function registerMetrics(router: Router, context: ServiceContext): void {
	const config = useConfig(context.env);
	setDatabaseFigures(jobFigures(context.database, config.batchMaxEnqueuedTokens));
	mountRoute(router, metricsRoute, async (req, res) => {
		const accountability = requireUser(req);
		if (!accountability.admin && !sentToken(req, config.metricsToken)) throw new MetricsAccessError();
		const text = await metricsRegistry.metrics();
		res.status(200).setHeader('content-type', metricsRegistry.contentType).send(text);
	});
}

function sentToken(req: Request, expected: string | undefined): boolean {
	if (!expected) return false;
	const sent = /^Bearer\s+(.+)$/i.exec(req.headers.authorization ?? '')?.[1]?.trim();
	if (!sent) return false;
	const a = Buffer.from(sent);
	const b = Buffer.from(expected);
	return a.length === b.length && timingSafeEqual(a, b);
}
