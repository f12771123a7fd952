import { z } from 'zod';
import { doc, named } from './contract-registry.ts';
import { success } from './envelope.ts';
import { defineRoute } from './route-contract.ts';

const tokenRefusedAnyway: [number, string] = [401, 'Only when a Bearer token is sent and refused: the route needs none, but Directus checks every token it receives.'];

/** 4.1 GET /. */
export const healthRoute = defineRoute({
	method: 'get',
	path: '/',
	operationId: 'getHealth',
	tag: 'Health',
	summary: 'Health check (4.1)',
	open: true,
	responses: {
		200: {
			description: 'The extension is up.',
			schema: success(
				'Health',
				{
					status: z.literal('ok'),
					extension: z.literal('pseo-automation'),
					version: doc(z.string().regex(/^\d+\.\d+\.\d+/), { description: 'The extension\'s semantic version.', examples: ['0.1.0'] }),
					endpoints: doc(z.array(z.string()), {
						description: 'The available endpoints, as `METHOD /path` relative to /pseo-endpoints.',
						examples: [['GET /', 'POST /pseo', 'GET /generations/:id', 'GET /generations?pseo_id=X']],
					}),
					jobs_needing_attention: doc(z.int().min(0).optional(), {
						description: 'Only for an admin\'s token: unfinished jobs whose steps keep failing (their `attention` is true; see `last_error`).',
						examples: [0],
					}),
				},
				'Interface 4.1: the extension is loaded and answering.',
			),
		},
	},
	errors: [tokenRefusedAnyway],
});

/** GET /openapi.json. */
export const openApiRoute = defineRoute({
	method: 'get',
	path: '/openapi.json',
	operationId: 'getOpenApiDocument',
	tag: 'Health',
	summary: 'This OpenAPI document',
	open: true,
	responses: {
		200: {
			description: 'The OpenAPI 3.1 document.',
			schema: named(
				'OpenApiDocument',
				z.looseObject({
					openapi: z.string().regex(/^3\.1\./),
					info: z.looseObject({ title: z.string(), version: z.string() }),
					paths: z.looseObject({}),
				}),
				{ description: 'This document.' },
			),
		},
	},
	errors: [tokenRefusedAnyway],
});

/** GET /metrics. */
export const metricsRoute = defineRoute({
	method: 'get',
	path: '/metrics',
	operationId: 'getMetrics',
	tag: 'Health',
	summary: 'The service\'s figures, for Prometheus',
	description:
		'Counters of this instance since it started (jobs ended, pages, tokens charged and refunded, provider calls and their latency, batch parts, lease claims and takeovers, publication deliveries, quality verdicts) and gauges read from the database (unfinished jobs, jobs needing attention, batches running), in the Prometheus text format. For admins, or for the user whose static token is PSEO_METRICS_TOKEN. docs/deployment.md has a scrape configuration and alert rules.',
	responses: {
		200: {
			description: 'The metrics, in the Prometheus text exposition format 0.0.4.',
			mediaType: 'text/plain',
			schema: named('MetricsText', z.string(), { description: 'Prometheus text exposition format, version 0.0.4.' }),
		},
	},
	errors: [401, [403, 'The caller is neither an admin nor the user whose static token is PSEO_METRICS_TOKEN.']],
});
