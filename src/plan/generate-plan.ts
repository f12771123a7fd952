import PQueue from 'p-queue';
import { ProviderUnavailableError } from '../errors/index.ts';
import type { JsonProvider } from '../provider/types.ts';
import type { Logger } from '../shared/logger.ts';
import { PlanCollector, repairPlanClusters, validatePlanClustersOutput, validatePlanPagesOutput } from './plan-items.ts';
import type { PlanCluster, PlanItemReport } from './plan-items.ts';
import { buildClusterMessages, buildPageMessages, MAX_AVOID_ROUTES } from './plan-prompt.ts';
import type { PlanSite, PromptCluster } from './plan-prompt.ts';
import { PLAN_CLUSTERS_SCHEMA_NAME, PLAN_PAGES_SCHEMA_NAME, planClustersSchema, planPagesSchema } from './plan-schema.ts';
import type { PlanPageItem } from './plan-schema.ts';

/** Input of {@link generatePlan}. */
export interface GeneratePlanInput {
	pseo: PlanSite;
	/** Canonical locale from the request contract, such as `en-US`. */
	languageCode: string;
	description: string;
	/** Exact number of pages wanted (fewer only when the model cannot find that many new routes). */
	pageCount: number;
	/** Routes or full URLs already on the website (its sitemap); the plan proposes none of them. */
	existingRoutes: readonly string[];
	provider: JsonProvider;
	logger: Logger;
	signal?: AbortSignal;
	/** Pages asked for in one model call; larger plans are generated in clusters. Default 40. */
	pagesPerCall?: number;
	/** Model calls in flight at once. Default 4. */
	concurrency?: number;
	/** Extra calls rounds when deduplication leaves the plan short. Default 3. */
	maxTopUpRounds?: number;
}

/** A generated content plan: `pages` is `main_json.pages` (interface 2.3), highest priority first. */
export interface GeneratedPlan {
	pages: PlanPageItem[];
	total_pages: number;
}

const DEFAULT_PAGES_PER_CALL = 40;
const DEFAULT_CONCURRENCY = 4;
const DEFAULT_TOP_UP_ROUNDS = 3;
const MIN_TOP_UP_ASK = 10;
// Below this share of surviving items a top-up round would ask for too much at once; more rounds are cheaper.
const MIN_SURVIVAL = 0.25;

// The single-call plan and its top-ups are not tied to one cluster: an empty slug tells the model to pick clusters.
const WHOLE_SITE: PlanCluster = { name: 'Whole website', slug: '', description: 'Every page of the plan.', page_count: 0 };

/**
 * Generates a content plan of `pageCount` pages.
 *
 * Up to `pagesPerCall` pages take one `pseo_plan_page_list` call for the whole site (the model groups them into
 * clusters itself). Larger plans first ask `pseo_plan_clusters` for about `pageCount / pagesPerCall` clusters, then
 * plan each cluster's share in calls of at most `pagesPerCall` pages: clusters run in parallel (`concurrency` at a
 * time), the calls of one cluster one after another so that each sees the routes of the last. Every item is
 * repaired or dropped, the first item of a route wins, and routes of the site are dropped. When that leaves the
 * plan short, up to `maxTopUpRounds` rounds ask for the missing pages, listing what is planned in `avoid_routes`.
 * The result is sorted by priority (highest first, stable) and cut to `pageCount`.
 *
 * Provider errors propagate unchanged (the caller refunds); a plan with no page at all is a
 * ProviderUnavailableError.
 */
export async function generatePlan(input: GeneratePlanInput): Promise<GeneratedPlan> {
	const options = checkInput(input);
	const { pageCount, pagesPerCall, logger } = options;
	const collector = new PlanCollector(input.existingRoutes);
	const run = new PlanRun(input, collector, options.concurrency);

	let clusters: PlanCluster[];
	if (pageCount <= pagesPerCall) {
		clusters = [WHOLE_SITE];
		await run.all([() => run.pages(WHOLE_SITE, pageCount)]);
	} else {
		clusters = await run.clusters(Math.ceil(pageCount / pagesPerCall), pageCount);
		const shares = allocatePages(
			clusters.map((cluster) => cluster.page_count),
			pageCount,
		);
		await run.all(
			clusters.map((cluster, i) => async () => {
				for (const size of chunkSizes(shares[i] ?? 0, pagesPerCall)) await run.pages(cluster, size);
			}),
		);
	}

	let round = 0;
	while (collector.size < pageCount && round < options.maxTopUpRounds) {
		const missing = pageCount - collector.size;
		const sizes = chunkSizes(topUpAsk(missing, collector.totals), pagesPerCall);
		const before = collector.size;
		await run.all(sizes.map((size, i) => () => run.pages(clusters[(round * sizes.length + i) % clusters.length]!, size)));
		round++;
		logger.info({ round, missing, added: collector.size - before }, 'Content plan top-up round finished');
		if (collector.size === before) break;
	}

	const pages = [...collector.pages].sort((a, b) => b.priority - a.priority).slice(0, pageCount);
	const totals = collector.totals;
	if (pages.length === 0) {
		throw new ProviderUnavailableError({ reason: 'the model proposed no usable route that the website does not already have.' });
	}
	if (pages.length < pageCount) {
		logger.warn({ requested: pageCount, planned: pages.length, topUpRounds: round }, 'Content plan is shorter than requested');
	}
	logger.info(
		{
			requested: pageCount,
			planned: pages.length,
			calls: run.calls,
			topUpRounds: round,
			received: totals.received,
			repaired: totals.repaired,
			dropped: totals.dropped,
		},
		'Content plan generated',
	);
	return { pages, total_pages: pages.length };
}

/**
 * Splits `total` pages over clusters in proportion to their wished-for counts (largest remainder, so the shares add
 * up to `total` exactly). A cluster without a wish (0) weighs as much as the smallest wish.
 */
export function allocatePages(wishes: readonly number[], total: number): number[] {
	if (wishes.length === 0) return [];
	const positive = wishes.filter((wish) => wish > 0);
	const floor = positive.length > 0 ? Math.min(...positive) : 1;
	const weights = wishes.map((wish) => (wish > 0 ? wish : floor));
	const sum = weights.reduce((a, b) => a + b, 0);
	const exact = weights.map((weight) => (weight / sum) * total);
	const shares = exact.map(Math.floor);
	let left = total - shares.reduce((a, b) => a + b, 0);
	const byRemainder = exact.map((value, i) => ({ i, remainder: value - Math.floor(value) })).sort((a, b) => b.remainder - a.remainder);
	for (const { i } of byRemainder) {
		if (left === 0) break;
		shares[i]!++;
		left--;
	}
	return shares;
}

/**
 * How many pages a top-up round asks for: the missing ones divided by the share of items that survived so far
 * (some new routes will collide again), with 10% to spare, and never fewer than a few, because in a small answer a
 * few repeated routes would be all there is.
 */
export function topUpAsk(missing: number, totals: Pick<PlanItemReport, 'received' | 'accepted'>): number {
	const survival = totals.received > 0 ? Math.max(MIN_SURVIVAL, totals.accepted / totals.received) : 1;
	// The epsilon keeps float noise (110.00000000000001) from asking for one page more.
	return Math.max(Math.ceil((missing * 11) / 10 / survival - 1e-9), MIN_TOP_UP_ASK);
}

/** `total` split into chunks of at most `max`, as even as possible (`chunkSizes(90, 40)` is `[30, 30, 30]`). */
export function chunkSizes(total: number, max: number): number[] {
	if (total <= 0) return [];
	const count = Math.ceil(total / max);
	const base = Math.floor(total / count);
	return Array.from({ length: count }, (_, i) => base + (i < total % count ? 1 : 0));
}

interface CheckedOptions {
	pageCount: number;
	pagesPerCall: number;
	concurrency: number;
	maxTopUpRounds: number;
	logger: Logger;
}

function checkInput(input: GeneratePlanInput): CheckedOptions {
	const positive = (name: string, value: unknown, fallback: number, min = 1): number => {
		if (value === undefined) return fallback;
		if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < min) {
			throw new TypeError(`Expected \`${name}\` to be an integer of at least ${min}, got \`${String(value)}\` (${typeof value}).`);
		}
		return value;
	};
	if (typeof input.provider?.completeJson !== 'function') throw new TypeError('Expected `provider` to be a JsonProvider.');
	if (!Array.isArray(input.existingRoutes)) {
		throw new TypeError(`Expected \`existingRoutes\` to be an array, got \`${String(input.existingRoutes)}\`.`);
	}
	if (input.pageCount === undefined) throw new TypeError('Expected `pageCount` to be an integer of at least 1, got `undefined`.');
	return {
		pageCount: positive('pageCount', input.pageCount, 0),
		pagesPerCall: positive('pagesPerCall', input.pagesPerCall, DEFAULT_PAGES_PER_CALL),
		concurrency: positive('concurrency', input.concurrency, DEFAULT_CONCURRENCY),
		maxTopUpRounds: positive('maxTopUpRounds', input.maxTopUpRounds, DEFAULT_TOP_UP_ROUNDS, 0),
		logger: input.logger,
	};
}

/** The model calls of one plan, sharing its collector, its abort signal and its bound on parallel calls. */
class PlanRun {
	readonly #input: GeneratePlanInput;
	readonly #collector: PlanCollector;
	readonly #queue: PQueue;
	readonly #controller = new AbortController();
	readonly #signal: AbortSignal;
	calls = 0;

	constructor(input: GeneratePlanInput, collector: PlanCollector, concurrency: number) {
		this.#input = input;
		this.#collector = collector;
		this.#queue = new PQueue({ concurrency });
		this.#signal = input.signal ? AbortSignal.any([input.signal, this.#controller.signal]) : this.#controller.signal;
	}

	/** Runs tasks on the queue; the first failure aborts the rest and is rethrown. */
	async all(tasks: readonly (() => Promise<void>)[]): Promise<void> {
		this.#signal.throwIfAborted();
		let failed = false;
		let failure: unknown;
		await Promise.all(
			tasks.map((task) =>
				this.#queue.add(task, { signal: this.#signal }).catch((error: unknown) => {
					if (failed) return;
					failed = true;
					failure = error;
					this.#controller.abort(error);
				}),
			),
		);
		if (failed) throw failure;
	}

	/** One `pseo_plan_clusters` call; at most twice the asked-for number of clusters are kept. */
	async clusters(clusterCount: number, totalPages: number): Promise<PlanCluster[]> {
		this.#signal.throwIfAborted();
		this.calls++;
		const value = await this.#input.provider.completeJson({
			schemaName: PLAN_CLUSTERS_SCHEMA_NAME,
			schema: planClustersSchema,
			messages: buildClusterMessages({ ...this.#prompt(), clusterCount, totalPages }),
			validate: validatePlanClustersOutput,
			signal: this.#signal,
			logContext: { task: 'plan_clusters', clusterCount, totalPages },
		});
		const { clusters, dropped } = repairPlanClusters(value);
		this.#input.logger.debug({ clusters: clusters.length, dropped }, 'Content plan clusters received');
		return clusters.slice(0, clusterCount * 2);
	}

	/** One `pseo_plan_page_list` call for `pageCount` pages of a cluster; its items go into the collector. */
	async pages(cluster: PlanCluster, pageCount: number): Promise<void> {
		this.#signal.throwIfAborted();
		this.calls++;
		const promptCluster: PromptCluster = { name: cluster.name, slug: cluster.slug, description: cluster.description };
		const value = await this.#input.provider.completeJson({
			schemaName: PLAN_PAGES_SCHEMA_NAME,
			schema: planPagesSchema,
			messages: buildPageMessages({ ...this.#prompt(), cluster: promptCluster, pageCount, avoidRoutes: this.#avoidRoutes(cluster.slug) }),
			validate: validatePlanPagesOutput,
			signal: this.#signal,
			logContext: { task: 'plan_pages', cluster: cluster.slug, pageCount },
		});
		const items = (value as { pages?: unknown }).pages;
		const options = cluster.slug === '' ? {} : { cluster: cluster.slug };
		const report: PlanItemReport = this.#collector.add(Array.isArray(items) ? items : [], options);
		this.#input.logger.debug({ cluster: cluster.slug, asked: pageCount, ...report }, 'Content plan pages received');
	}

	#prompt() {
		return { pseo: this.#input.pseo, languageCode: this.#input.languageCode, description: this.#input.description };
	}

	/** Routes the model must not propose, likeliest collisions first: this cluster's, then the rest, planned first. */
	#avoidRoutes(slug: string): string[] {
		const underSlug = (route: string) => slug !== '' && (route === `/${slug}` || route.startsWith(`/${slug}/`));
		const pages = this.#collector.pages;
		const existing = [...this.#collector.existingRoutes];
		const sameCluster = (page: PlanPageItem) => slug !== '' && (page.cluster === slug || underSlug(page.route));
		const ordered = [
			...pages.filter(sameCluster).map((page) => page.route),
			...existing.filter(underSlug),
			...pages.filter((page) => !sameCluster(page)).map((page) => page.route),
			...existing.filter((route) => !underSlug(route)),
		];
		return ordered.slice(0, MAX_AVOID_ROUTES);
	}
}
