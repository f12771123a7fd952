import { describe, expect, it } from 'vitest';
import { ProviderUnavailableError } from '../errors/index.ts';
import type { JsonCompletionRequest, JsonProvider } from '../provider/types.ts';
import type { Logger } from '../shared/logger.ts';
import { allocatePages, chunkSizes, generatePlan, topUpAsk } from './generate-plan.ts';
import type { GeneratePlanInput } from './generate-plan.ts';
import { ROUTE_PATTERN } from './normalize-route.ts';
import { PLAN_CLUSTERS_SCHEMA_NAME, PLAN_PAGES_SCHEMA_NAME } from './plan-schema.ts';

type Context = Record<string, unknown> & { task: string };
type Respond = (context: Context, call: number) => unknown;

interface Call {
	request: JsonCompletionRequest;
	context: Context;
}

/**
 * An in-memory JsonProvider driven by a script: it reads the json context block of the last user message, asks the
 * script for an answer, and, like the real provider, retries (up to 3 attempts) when the request's validate hook
 * refuses the answer.
 */
class ScriptedProvider implements JsonProvider {
	readonly calls: Call[] = [];
	readonly rejections: string[] = [];
	inFlight = 0;
	maxInFlight = 0;
	readonly #respond: Respond;
	readonly #delayMs: number;

	constructor(respond: Respond, delayMs = 0) {
		this.#respond = respond;
		this.#delayMs = delayMs;
	}

	async completeJson<T = unknown>(request: JsonCompletionRequest): Promise<T> {
		const context = contextOf(request);
		this.inFlight++;
		this.maxInFlight = Math.max(this.maxInFlight, this.inFlight);
		try {
			for (let attempt = 0; attempt < 3; attempt++) {
				request.signal?.throwIfAborted();
				this.calls.push({ request, context });
				if (this.#delayMs > 0) await new Promise((resolve) => setTimeout(resolve, this.#delayMs));
				// A round trip through JSON, as over the wire: the script cannot hand back shared objects.
				const value: unknown = JSON.parse(JSON.stringify(this.#respond(context, this.calls.length)));
				const problem = request.validate?.(value) ?? null;
				if (problem === null) return value as T;
				this.rejections.push(problem);
			}
			throw new Error(`scripted provider: invalid output after 3 attempts (${this.rejections.at(-1)})`);
		} finally {
			this.inFlight--;
		}
	}

	pageCalls(): Call[] {
		return this.calls.filter((call) => call.context.task === 'plan_pages');
	}
}

function contextOf(request: JsonCompletionRequest): Context {
	const last = request.messages.filter((message) => message.role === 'user').at(-1)?.content ?? '';
	const blocks = [...last.matchAll(/```json\n([\s\S]*?)\n```/g)];
	expect(blocks).toHaveLength(1);
	const context = JSON.parse(blocks[0]![1]!) as Context;
	expect(context.task).toBe(request.schemaName === PLAN_CLUSTERS_SCHEMA_NAME ? 'plan_clusters' : 'plan_pages');
	return context;
}

interface RecordedLog {
	level: keyof Logger;
	obj: object;
	msg?: string;
}

function recordingLogger(): Logger & { lines: RecordedLog[] } {
	const lines: RecordedLog[] = [];
	const at = (level: keyof Logger) => (obj: object, msg?: string) => void lines.push({ level, obj, msg });
	return { lines, debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') };
}

function clusterAnswer(context: Context): unknown {
	const count = Number(context.cluster_count);
	const total = Number(context.total_pages);
	return {
		clusters: Array.from({ length: count }, (_, i) => ({
			name: `Topic ${i + 1}`,
			slug: `topic-${i + 1}`,
			description: `Pages about topic ${i + 1}`,
			page_count: Math.floor(total / count) + (i < total % count ? 1 : 0),
		})),
	};
}

function pageItem(route: string, priority: number | string, cluster = 'x'): Record<string, unknown> {
	return {
		route,
		title: `Title of ${route}`,
		priority,
		primary_keyword: route.replaceAll('/', ' ').trim(),
		search_intent: 'informational',
		page_type: 'article',
		parent_route: null,
		cluster,
	};
}

/** A well-behaved planner: `page_count` new routes under the cluster slug, none in avoid_routes, priorities falling. */
function freshPages(context: Context, call: number): unknown {
	const cluster = context.cluster as { slug: string };
	const prefix = cluster.slug === '' ? '/site' : `/${cluster.slug}`;
	const avoid = new Set(context.avoid_routes as string[]);
	const count = Number(context.page_count);
	const pages: unknown[] = [];
	for (let n = 1; pages.length < count; n++) {
		const route = `${prefix}/page-${call}-${n}`;
		if (!avoid.has(route)) pages.push(pageItem(route, 100 - pages.length, cluster.slug));
	}
	return { pages };
}

const SITE = { website_url: 'https://example.com', website_software: 'wordpress', master_prompt: 'Be helpful.' };

function input(provider: JsonProvider, overrides: Partial<GeneratePlanInput> = {}): GeneratePlanInput {
	return {
		pseo: SITE,
		languageCode: 'en-US',
		description: 'A plumbing company in Leeds.',
		pageCount: 10,
		existingRoutes: [],
		provider,
		logger: recordingLogger(),
		...overrides,
	};
}

function routesOf(plan: { pages: { route: string }[] }): string[] {
	return plan.pages.map((page) => page.route);
}

describe('generatePlan', () => {
	it('plans a small site in one pseo_plan_page_list call for the whole site', async () => {
		const provider = new ScriptedProvider(freshPages);
		const plan = await generatePlan(input(provider, { pageCount: 25 }));
		expect(provider.calls).toHaveLength(1);
		expect(provider.calls[0]!.request.schemaName).toBe(PLAN_PAGES_SCHEMA_NAME);
		expect(provider.calls[0]!.context).toMatchObject({ task: 'plan_pages', page_count: 25, language: 'en-US', cluster: { slug: '' } });
		expect(plan.total_pages).toBe(25);
		expect(new Set(routesOf(plan)).size).toBe(25);
	});

	it('keeps the cluster the model gave each page in a whole-site plan', async () => {
		const provider = new ScriptedProvider(() => ({ pages: [pageItem('/a', 5, 'Gas Boilers'), pageItem('/b', 4, '')] }));
		const plan = await generatePlan(input(provider, { pageCount: 2 }));
		expect(plan.pages.map((page) => page.cluster)).toEqual(['gas-boilers', 'general']);
	});

	it('generates a 500-page plan in clusters with no duplicate and no existing route, despite duplicates across chunks', async () => {
		const existing = Array.from({ length: 60 }, (_, i) => `https://example.com/shared/existing-${i}/`);
		const shared = Array.from({ length: 20 }, (_, i) => `/shared/popular-${i}`);
		const provider = new ScriptedProvider((context, call) => {
			if (context.task === 'plan_clusters') return clusterAnswer(context);
			const fresh = freshPages(context, call) as { pages: Record<string, unknown>[] };
			// Every chunk also proposes the same popular routes, some site routes (in another spelling) and, once,
			// its own first route twice: all of it must be dropped.
			const extra = [
				...shared.map((route) => pageItem(route, 99)),
				...existing.slice(0, 10).map((url, i) => pageItem(url.replace('https://example.com', '').toUpperCase(), 98 - i)),
				{ ...fresh.pages[0]!, title: 'Duplicate within the chunk' },
			];
			return { pages: [...fresh.pages.slice(0, Number(context.page_count) - 10), ...extra] };
		}, 2);
		const plan = await generatePlan(input(provider, { pageCount: 500, existingRoutes: existing }));

		const routes = routesOf(plan);
		expect(plan.total_pages).toBe(500);
		expect(routes).toHaveLength(500);
		expect(new Set(routes).size).toBe(500);
		for (const route of routes) expect(route).toMatch(ROUTE_PATTERN);
		expect(routes.filter((route) => route.startsWith('/shared/existing-'))).toEqual([]);
		expect(routes.filter((route) => route.startsWith('/shared/popular-'))).toHaveLength(20);
		expect(plan.pages.filter((page) => page.title === 'Duplicate within the chunk')).toEqual([]);

		expect(provider.calls[0]!.context).toEqual({ task: 'plan_clusters', cluster_count: 13, total_pages: 500, language: 'en-US' });
		expect(provider.pageCalls().length).toBeGreaterThanOrEqual(13);
		for (const call of provider.pageCalls()) expect(Number(call.context.page_count)).toBeLessThanOrEqual(40);
		expect(provider.maxInFlight).toBeLessThanOrEqual(4);
		expect(provider.maxInFlight).toBeGreaterThan(1);
	});

	it('plans the chunks of one cluster one after another, each avoiding the routes of the last', async () => {
		const provider = new ScriptedProvider((context, call) =>
			context.task === 'plan_clusters'
				? { clusters: [{ name: 'Only', slug: 'only', description: 'All of it', page_count: 100 }] }
				: freshPages(context, call),
		);
		const plan = await generatePlan(input(provider, { pageCount: 100, pagesPerCall: 40 }));
		const pageCalls = provider.pageCalls();
		expect(pageCalls.map((call) => call.context.page_count)).toEqual([34, 33, 33]);
		expect(pageCalls[0]!.context.avoid_routes).toEqual([]);
		expect(pageCalls[1]!.context.avoid_routes).toHaveLength(34);
		expect(pageCalls[2]!.context.avoid_routes).toHaveLength(67);
		expect(provider.maxInFlight).toBe(1);
		expect(plan.total_pages).toBe(100);
		expect(plan.pages.every((page) => page.cluster === 'only')).toBe(true);
	});

	it('splits the plan over clusters in proportion to their page counts', async () => {
		const provider = new ScriptedProvider((context, call) =>
			context.task === 'plan_clusters'
				? {
						clusters: [
							{ name: 'Big', slug: 'big', description: '', page_count: 30 },
							{ name: 'Small', slug: 'small', description: '', page_count: 10 },
						],
					}
				: freshPages(context, call),
		);
		const plan = await generatePlan(input(provider, { pageCount: 60, pagesPerCall: 40 }));
		const asked = (slug: string) =>
			provider
				.pageCalls()
				.filter((call) => (call.context.cluster as { slug: string }).slug === slug)
				.reduce((sum, call) => sum + Number(call.context.page_count), 0);
		expect([asked('big'), asked('small')]).toEqual([45, 15]);
		expect(plan.total_pages).toBe(60);
	});

	it('tops up with extra rounds listing everything planned in avoid_routes when duplicates leave it short', async () => {
		let firstAnswer = true;
		const provider = new ScriptedProvider((context, call) => {
			if (!firstAnswer) return freshPages(context, call);
			firstAnswer = false;
			// The first answer repeats itself: 20 items but only 5 distinct routes.
			return { pages: Array.from({ length: 20 }, (_, i) => pageItem(`/repeat-${i % 5}`, 50)) };
		});
		const logger = recordingLogger();
		const plan = await generatePlan(input(provider, { pageCount: 20, logger }));
		expect(plan.total_pages).toBe(20);
		expect(new Set(routesOf(plan)).size).toBe(20);
		// 15 missing, and only a quarter of the items survived so far: ask for 15 × 1.1 / 0.25 = 66, in two calls.
		const topUps = provider.pageCalls().slice(1);
		expect(topUps.map((call) => call.context.page_count)).toEqual([33, 33]);
		for (const call of topUps) {
			expect(call.context.avoid_routes).toEqual(['/repeat-0', '/repeat-1', '/repeat-2', '/repeat-3', '/repeat-4']);
		}
		expect(logger.lines.some((line) => line.msg === 'Content plan top-up round finished')).toBe(true);
	});

	it('stops topping up when a round brings nothing new, and returns the shorter plan with a warning', async () => {
		const provider = new ScriptedProvider(() => ({ pages: [pageItem('/only-one', 1), pageItem('/only-two', 2)] }));
		const logger = recordingLogger();
		const plan = await generatePlan(input(provider, { pageCount: 10, logger, maxTopUpRounds: 3 }));
		expect(routesOf(plan)).toEqual(['/only-two', '/only-one']);
		expect(provider.calls).toHaveLength(2);
		expect(logger.lines.find((line) => line.level === 'warn')?.obj).toMatchObject({ requested: 10, planned: 2 });
	});

	it('makes at most maxTopUpRounds extra rounds', async () => {
		let call = 0;
		// Every call adds a single new route, so the plan never fills up.
		const provider = new ScriptedProvider(() => ({ pages: [pageItem(`/one-more-${call++}`, 1)] }));
		const plan = await generatePlan(input(provider, { pageCount: 30, maxTopUpRounds: 2 }));
		expect(plan.total_pages).toBe(3);
		expect(provider.calls).toHaveLength(3);
	});

	it('sorts by priority, highest first, keeps the model order among equals, and cuts to exactly pageCount', async () => {
		const provider = new ScriptedProvider(() => ({
			pages: [
				pageItem('/low', 10),
				pageItem('/tie-first', 50),
				pageItem('/top', 90),
				pageItem('/tie-second', 50),
				pageItem('/string-priority', '70'),
				pageItem('/over', 400),
				pageItem('/lowest', 1),
			],
		}));
		const plan = await generatePlan(input(provider, { pageCount: 6 }));
		expect(routesOf(plan)).toEqual(['/over', '/top', '/string-priority', '/tie-first', '/tie-second', '/low']);
		expect(plan.pages[0]!.priority).toBe(100);
		expect(plan.total_pages).toBe(6);
	});

	it('repairs routes and fields of the model output', async () => {
		const provider = new ScriptedProvider(() => ({
			pages: [{ ...pageItem('Kombi Bakımı/İstanbul Fiyatları/', 60), search_intent: 'Commercial', page_type: 'blog post', title: '' }],
		}));
		const plan = await generatePlan(input(provider, { pageCount: 1 }));
		expect(plan.pages).toEqual([
			{
				route: '/kombi-bakimi/istanbul-fiyatlari',
				title: 'Istanbul Fiyatlari',
				priority: 60,
				primary_keyword: 'Kombi Bakımı İstanbul Fiyatları',
				search_intent: 'commercial',
				page_type: 'article',
				parent_route: null,
				cluster: 'x',
			},
		]);
	});

	it('rejects through the validate hook an answer without a usable page, so the provider retries it', async () => {
		let calls = 0;
		const provider = new ScriptedProvider((context, call) =>
			calls++ === 0 ? { pages: [pageItem('/', 9), pageItem('/日本', 9)] } : freshPages(context, call),
		);
		const plan = await generatePlan(input(provider, { pageCount: 5 }));
		expect(provider.rejections).toEqual(['The answer has no page with a usable route.']);
		expect(plan.total_pages).toBe(5);
	});

	it('throws ProviderUnavailableError when every proposed route already exists', async () => {
		const provider = new ScriptedProvider(() => ({ pages: [pageItem('/about', 9), pageItem('/contact', 8)] }));
		const promise = generatePlan(input(provider, { pageCount: 2, existingRoutes: ['https://example.com/about', '/contact/'] }));
		await expect(promise).rejects.toBeInstanceOf(ProviderUnavailableError);
		await expect(promise).rejects.toThrow(/no usable route/);
	});

	it('propagates a provider error unchanged and starts no further call after it', async () => {
		const failure = new Error('provider is down');
		const provider = new ScriptedProvider((context, call) => {
			if (context.task === 'plan_clusters') return clusterAnswer(context);
			if (call === 3) throw failure;
			return freshPages(context, call);
		}, 5);
		await expect(generatePlan(input(provider, { pageCount: 400, pagesPerCall: 40, concurrency: 2 }))).rejects.toBe(failure);
		await new Promise((resolve) => setTimeout(resolve, 50));
		// The clusters call, the two calls in flight, and at most the one that started before the failure was seen.
		expect(provider.calls.length).toBeLessThanOrEqual(4);
	});

	it('propagates a clusters-call error unchanged', async () => {
		const failure = new Error('quota exceeded');
		const provider = new ScriptedProvider(() => {
			throw failure;
		});
		await expect(generatePlan(input(provider, { pageCount: 100 }))).rejects.toBe(failure);
		expect(provider.pageCalls()).toHaveLength(0);
	});

	it('stops when its signal aborts', async () => {
		const controller = new AbortController();
		controller.abort(new Error('client went away'));
		const provider = new ScriptedProvider(freshPages);
		await expect(generatePlan(input(provider, { signal: controller.signal }))).rejects.toThrow('client went away');
		expect(provider.calls).toHaveLength(0);
	});

	it('passes its signal to the provider so calls in flight can stop', async () => {
		const controller = new AbortController();
		const provider = new ScriptedProvider((context) => {
			controller.abort(new Error('stop now'));
			return clusterAnswer(context);
		});
		await expect(generatePlan(input(provider, { pageCount: 100, signal: controller.signal }))).rejects.toThrow('stop now');
		expect(provider.calls[0]!.request.signal?.aborted).toBe(true);
		expect(provider.pageCalls()).toHaveLength(0);
	});

	it.each([
		[{ pageCount: 0 }, /`pageCount` to be an integer of at least 1, got `0`/],
		[{ pageCount: 2.5 }, /`pageCount`.*got `2.5`/],
		[{ pageCount: '10' as unknown as number }, /`pageCount`.*got `10` \(string\)/],
		[{ pageCount: undefined as unknown as number }, /`pageCount`.*got `undefined`/],
		[{ pagesPerCall: 0 }, /`pagesPerCall` to be an integer of at least 1, got `0`/],
		[{ concurrency: -1 }, /`concurrency`.*got `-1`/],
		[{ maxTopUpRounds: -1 }, /`maxTopUpRounds` to be an integer of at least 0, got `-1`/],
		[{ existingRoutes: 'nope' as unknown as string[] }, /`existingRoutes` to be an array/],
		[{ provider: {} as JsonProvider }, /`provider` to be a JsonProvider/],
	])('throws a TypeError for bad options %j', async (overrides, message) => {
		const provider = new ScriptedProvider(freshPages);
		const promise = generatePlan(input(provider, overrides));
		await expect(promise).rejects.toBeInstanceOf(TypeError);
		await expect(promise).rejects.toThrow(message);
		expect(provider.calls).toHaveLength(0);
	});
});

describe('allocatePages', () => {
	it('splits in proportion and adds up exactly', () => {
		expect(allocatePages([30, 10], 60)).toEqual([45, 15]);
		expect(allocatePages([1, 1, 1], 10)).toEqual([4, 3, 3]);
		const shares = allocatePages([7, 3, 9, 1, 12], 500);
		expect(shares.reduce((a, b) => a + b, 0)).toBe(500);
	});

	it('weighs clusters without a wish like the smallest wish', () => {
		expect(allocatePages([0, 0], 9)).toEqual([5, 4]);
		expect(allocatePages([10, 0], 20)).toEqual([10, 10]);
		expect(allocatePages([], 5)).toEqual([]);
	});
});

describe('chunkSizes', () => {
	it('splits evenly into chunks of at most max', () => {
		expect(chunkSizes(90, 40)).toEqual([30, 30, 30]);
		expect(chunkSizes(40, 40)).toEqual([40]);
		expect(chunkSizes(41, 40)).toEqual([21, 20]);
		expect(chunkSizes(0, 40)).toEqual([]);
	});
});

describe('topUpAsk', () => {
	it('asks for the missing pages with 10% to spare, divided by the share of items that survived', () => {
		expect(topUpAsk(100, { received: 0, accepted: 0 })).toBe(110);
		expect(topUpAsk(100, { received: 200, accepted: 200 })).toBe(110);
		expect(topUpAsk(100, { received: 200, accepted: 100 })).toBe(220);
	});

	it('never divides by less than a quarter, and never asks for fewer than 10 pages', () => {
		expect(topUpAsk(100, { received: 1000, accepted: 10 })).toBe(440);
		expect(topUpAsk(2, { received: 10, accepted: 10 })).toBe(10);
	});
});
