import { describe, expect, it } from 'vitest';
import { defaultConfig } from './config.ts';
import type { FakeConfig } from './config.ts';
import { metaDescription, pageResponder, planClustersResponder, planPagesResponder, slugify } from './responders.ts';
import type { ResponderInput } from './responders.ts';
import { checkPage } from '../../../src/quality/quality-gate.ts';
import { signatureOf, similarity } from '../../../src/quality/minhash.ts';

function input(context: Record<string, unknown>, config: Partial<FakeConfig> = {}): ResponderInput {
	return { task: String(context.task), context, schemaName: null, schema: null, messages: [], model: 'm', config: { ...defaultConfig(), ...config } };
}

interface PlanPage {
	route: string;
	title: string;
	priority: number;
}

describe('metaDescription', () => {
	it.each(['A', 'Plumbing in Leeds', 'x'.repeat(40), 'An extraordinarily long page title that alone nearly fills the whole meta description budget'])(
		'stays within 120 to 160 characters for %s',
		(title) => {
			const text = metaDescription(title, title.toLowerCase());
			expect(text.length).toBeGreaterThanOrEqual(120);
			expect(text.length).toBeLessThanOrEqual(160);
		},
	);
});

describe('slugify', () => {
	it('lower-cases, strips accents and joins words with hyphens', () => {
		expect(slugify("Beginner's Guide to Café Pricing (2025)")).toBe('beginner-s-guide-to-cafe-pricing-2025');
	});
});

describe('pageResponder', () => {
	it('links the body and internal_links to two sibling routes, never to its own route', () => {
		const siblings = [
			{ route: '/a', title: 'A' },
			{ route: '/b', title: 'B' },
			{ route: '/self', title: 'Self' },
			{ route: '/c', title: 'C' },
		];
		const page = pageResponder(input({ task: 'page', route: '/self', title: 'Self', language: 'en', sibling_routes: siblings })) as {
			internal_links: { anchor: string; route: string }[];
			body_markdown: string;
			faq: unknown[];
		};
		expect(page.internal_links).toHaveLength(2);
		const routes = page.internal_links.map((link) => link.route);
		expect(new Set(routes).size).toBe(2);
		for (const route of routes) {
			expect(['/a', '/b', '/c']).toContain(route);
			expect(page.body_markdown).toContain(`](${route})`);
		}
		expect(page.faq.length).toBeGreaterThan(0);
	});

	it('follows editor_instructions in a closing section, and writes the same page without them', () => {
		const context = { task: 'page', route: '/p', title: 'P', language: 'en' };
		const plain = pageResponder(input(context)) as { body_markdown: string };
		const revised = pageResponder(input({ ...context, editor_instructions: 'Mention the weekend opening hours.' })) as { body_markdown: string };
		expect(plain.body_markdown).not.toContain('As requested');
		expect(revised.body_markdown).toBe(`${plain.body_markdown}\n\n### As requested\n\nMention the weekend opening hours.`);
	});
});

describe('pageResponder and the quality gate', () => {
	interface Page {
		title: string;
		meta_title: string;
		meta_description: string;
		h1: string;
		body_markdown: string;
		faq: unknown[];
	}
	const plan = ['Pricing', 'Locations', 'Comparisons', 'Use Cases'].flatMap(
		(name) => (planPagesResponder(input({ task: 'plan_pages', cluster: { name, slug: slugify(name) }, page_count: 50 })) as { pages: (PlanPage & { primary_keyword: string })[] }).pages,
	);
	const siblings = plan.map(({ route, title }) => ({ route, title }));
	const write = (item: PlanPage & { primary_keyword: string }, extra: Record<string, unknown> = {}, config: Partial<FakeConfig> = {}) =>
		pageResponder(input({ task: 'page', ...item, language: 'en', sibling_routes: siblings.slice(0, 8), ...extra }, config)) as Page;
	const gate = (item: PlanPage & { primary_keyword: string }, page: Page) =>
		checkPage({ ...page, body: page.body_markdown }, { route: item.route, primaryKeyword: item.primary_keyword, planRoutes: new Set(plan.map((p) => p.route)) }, { minWords: 300, maxSimilarity: 0.8 });

	it('writes pages of 300 words or more that pass every check, and no two of 200 are alike', () => {
		const signatures = plan.map((item) => {
			const page = write(item);
			expect(gate(item, page).filter((found) => found.severity === 'fail'), item.route).toEqual([]);
			return signatureOf(`${page.title}\n${page.body_markdown}`)!;
		});
		let highest = 0;
		for (let i = 0; i < signatures.length; i++) for (let j = i + 1; j < signatures.length; j++) highest = Math.max(highest, similarity(signatures[i]!, signatures[j]!));
		expect(highest).toBeLessThan(0.4);
	});

	it('writes thin pages and near-duplicates for lowQualityRoutes, and good ones once the prompt names the issues', () => {
		const [a, b] = plan as [PlanPage & { primary_keyword: string }, PlanPage & { primary_keyword: string }];
		const config = { lowQualityRoutes: { [a.route]: 'thin' as const, [b.route]: 'duplicate' as const } };
		expect(gate(a, write(a, {}, config)).map((found) => found.check)).toContain('words');
		const twin = { ...a, route: '/twin' };
		const duplicate = (item: typeof a) => write(item, {}, { lowQualityRoutes: { [b.route]: 'duplicate', '/twin': 'duplicate' } });
		const score = similarity(signatureOf(`${b.title}\n${duplicate(b).body_markdown}`)!, signatureOf(`${twin.title}\n${duplicate(twin).body_markdown}`)!);
		expect(score).toBeGreaterThan(0.85);
		expect(gate(a, write(a, { quality_issues: ['words: 40 words'] }, config)).filter((found) => found.severity === 'fail')).toEqual([]);
		expect(gate(a, write(a, { quality_issues: ['words: 40 words'] }, { ...config, lowQualityPersists: true })).map((found) => found.check)).toContain('words');
	});
});

describe('planClustersResponder', () => {
	it('returns cluster_count clusters whose page counts sum to total_pages', () => {
		const { clusters } = planClustersResponder(input({ task: 'plan_clusters', cluster_count: 4, total_pages: 23 })) as {
			clusters: { slug: string; page_count: number }[];
		};
		expect(clusters).toHaveLength(4);
		expect(clusters.reduce((sum, cluster) => sum + cluster.page_count, 0)).toBe(23);
		expect(new Set(clusters.map((cluster) => cluster.slug)).size).toBe(4);
	});
});

describe('planPagesResponder', () => {
	const context = { task: 'plan_pages', cluster: { name: 'Pricing', slug: 'pricing' }, page_count: 10, language: 'en' };

	it('returns page_count unique routes under the cluster slug, none of them in avoid_routes', () => {
		const avoid = ['/pricing/complete-guide-to-pricing', '/pricing/cost-of-pricing'];
		const { pages } = planPagesResponder(input({ ...context, avoid_routes: avoid })) as { pages: PlanPage[] };
		expect(pages).toHaveLength(10);
		const routes = pages.map((page) => page.route);
		expect(new Set(routes).size).toBe(10);
		for (const route of routes) expect(route).toMatch(/^\/pricing\/[a-z0-9-]+$/);
		for (const route of avoid) expect(routes).not.toContain(route);
		expect(pages[0]?.priority).toBeGreaterThan(pages[9]?.priority ?? 1);
	});

	it('applies planIncludeRoutes, planInvalidRate and planDuplicateRate', () => {
		const { pages } = planPagesResponder(
			input(context, { planIncludeRoutes: ['/existing'], planInvalidRate: 0.2, planDuplicateRate: 0.2 }),
		) as { pages: PlanPage[] };
		const routes = pages.map((page) => page.route);
		expect(routes).toHaveLength(10);
		expect(routes[0]).toBe('/existing');
		const invalid = routes.filter((route) => !route.startsWith('/') || route !== route.toLowerCase());
		expect(invalid).toHaveLength(2);
		expect(routes.length - new Set(routes).size).toBe(2);
	});
});
