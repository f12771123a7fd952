import { balanceRoute } from './balance.ts';
import {
	bulkGenerationRoute,
	cancelGenerationRoute,
	getGenerationRoute,
	listGenerationsRoute,
	onDemandGenerationRoute,
	refreshGenerationRoute,
	regeneratePostRoute,
	retryGenerationRoute,
} from './generations.ts';
import { healthRoute, metricsRoute, openApiRoute } from './health.ts';
import { generateContentPlanRoute, importContentPlanRoute } from './plans.ts';
import {
	deletePublishingTargetRoute,
	getPublicationRoute,
	getPublishingTargetRoute,
	publishRoute,
	savePublishingTargetRoute,
} from './publishing.ts';
import type { RouteContract } from './route-contract.ts';
import { fetchSitemapRoute } from './sitemap.ts';
import { createWebsiteRoute } from './websites.ts';
import { providersRoute } from './providers.ts';

/** Every route under /pseo-endpoints, in the order the document lists them. */
export const ROUTES: readonly RouteContract[] = [
	healthRoute,
	openApiRoute,
	metricsRoute,
	createWebsiteRoute,
	providersRoute,
	onDemandGenerationRoute,
	bulkGenerationRoute,
	refreshGenerationRoute,
	listGenerationsRoute,
	getGenerationRoute,
	cancelGenerationRoute,
	retryGenerationRoute,
	regeneratePostRoute,
	generateContentPlanRoute,
	importContentPlanRoute,
	fetchSitemapRoute,
	savePublishingTargetRoute,
	getPublishingTargetRoute,
	deletePublishingTargetRoute,
	publishRoute,
	getPublicationRoute,
	balanceRoute,
];
