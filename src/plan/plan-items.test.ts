import { describe, expect, it } from 'vitest';
import {
	countUsablePages,
	MAX_TITLE_LENGTH,
	PlanCollector,
	repairPlanClusters,
	repairPlanPage,
	slugify,
	validatePlanClustersOutput,
	validatePlanPagesOutput,
} from './plan-items.ts';
import type { PlanPageItem } from './plan-schema.ts';

function item(overrides: Record<string, unknown> = {}): Record<string, unknown> {
	return {
		route: '/boilers/combi-repair',
		title: 'Combi Boiler Repair',
		priority: 80,
		primary_keyword: 'combi boiler repair',
		search_intent: 'transactional',
		page_type: 'service',
		parent_route: '/boilers',
		cluster: 'boilers',
		...overrides,
	};
}

function page(overrides: Record<string, unknown> = {}): PlanPageItem {
	const result = repairPlanPage(item(overrides));
	if (!result.ok) throw new Error(`item dropped: ${result.reason}`);
	return result.page;
}

describe('repairPlanPage', () => {
	it('keeps a valid item unchanged and reports no repair', () => {
		expect(repairPlanPage(item())).toEqual({ ok: true, repaired: false, page: item() });
	});

	it('repairs a route that can be normalised', () => {
		const result = repairPlanPage(item({ route: 'Boilers/Combi Repair/' }));
		expect(result).toMatchObject({ ok: true, repaired: true, page: { route: '/boilers/combi-repair' } });
	});

	it.each([
		[{ route: '/日本語' }, 'invalid_route'],
		[{ route: 42 }, 'invalid_route'],
		[{ route: undefined }, 'invalid_route'],
		[{ route: '' }, 'invalid_route'],
		[{ route: '/' }, 'root_route'],
		[{ route: 'https://example.com/' }, 'root_route'],
		[{ route: `/${'a'.repeat(201)}` }, 'route_too_long'],
	])('drops %j as %s', (overrides, reason) => {
		expect(repairPlanPage(item(overrides))).toEqual({ ok: false, reason });
	});

	it.each([[null], ['a string'], [[1]]])('drops a non-object item %j', (raw) => {
		expect(repairPlanPage(raw)).toEqual({ ok: false, reason: 'not_an_object' });
	});

	it('derives a missing or blank title from the route', () => {
		expect(page({ title: '   ' }).title).toBe('Combi Repair');
		expect(page({ title: null }).title).toBe('Combi Repair');
	});

	it('trims and collapses whitespace in titles and caps long titles at a word boundary', () => {
		expect(page({ title: '  Combi \n Boiler   Repair ' }).title).toBe('Combi Boiler Repair');
		const long = page({ title: 'word '.repeat(60) }).title;
		expect([...long].length).toBeLessThanOrEqual(MAX_TITLE_LENGTH);
		expect(long.endsWith('word')).toBe(true);
	});

	it('caps titles by code points, so emoji are not split', () => {
		const title = page({ title: '🔥'.repeat(200) }).title;
		expect([...title].length).toBe(MAX_TITLE_LENGTH);
		expect(title).toBe('🔥'.repeat(MAX_TITLE_LENGTH));
	});

	it.each([
		[55.5, 55.5],
		['70', 70],
		[250, 100],
		[-4, 0],
		[null, 0],
		['high', 0],
		[Number.POSITIVE_INFINITY, 0],
	])('turns priority %j into %j', (priority, expected) => {
		expect(page({ priority }).priority).toBe(expected);
	});

	it.each([
		['Commercial', 'commercial'],
		[' navigation ', 'navigational'],
		['commercial investigation', 'commercial'],
		['buy now', 'informational'],
		[null, 'informational'],
	])('coerces search_intent %j to %j', (value, expected) => {
		expect(page({ search_intent: value }).search_intent).toBe(expected);
	});

	it.each([
		['FAQ', 'faq'],
		['blog post', 'article'],
		['how-to', 'guide'],
		['Landing Page', 'landing'],
		['vs', 'comparison'],
		['widget', 'article'],
		[7, 'article'],
	])('coerces page_type %j to %j', (value, expected) => {
		expect(page({ page_type: value }).page_type).toBe(expected);
	});

	it('normalises parent_route, and nulls it when unusable or equal to the route', () => {
		expect(page({ parent_route: 'Boilers/' }).parent_route).toBe('/boilers');
		expect(page({ parent_route: '' }).parent_route).toBeNull();
		expect(page({ parent_route: '/日本' }).parent_route).toBeNull();
		expect(page({ parent_route: '/boilers/combi-repair/' }).parent_route).toBeNull();
		expect(page({ parent_route: 12 }).parent_route).toBeNull();
		expect(page({ parent_route: null }).parent_route).toBeNull();
	});

	it('fills a blank keyword from the title and slugs the cluster, defaulting to "general"', () => {
		expect(page({ primary_keyword: '' }).primary_keyword).toBe('combi boiler repair');
		expect(page({ cluster: 'Gas Boilers' }).cluster).toBe('gas-boilers');
		expect(page({ cluster: '' }).cluster).toBe('general');
	});

	it('sets the cluster it is given, whatever the model said', () => {
		const result = repairPlanPage(item({ cluster: 'something-else' }), { cluster: 'boilers' });
		expect(result).toMatchObject({ ok: true, repaired: false, page: { cluster: 'boilers' } });
	});

	it('reports a repair for each kind of fixed field', () => {
		const fixes = [{ title: ' Combi Boiler Repair' }, { priority: '80' }, { search_intent: 'Transactional' }, { parent_route: '/Boilers' }, { cluster: 'Boilers' }];
		for (const fix of fixes) expect(repairPlanPage(item(fix))).toMatchObject({ ok: true, repaired: true });
	});
});

describe('PlanCollector', () => {
	it('keeps the first item of each route across batches and counts duplicates', () => {
		const collector = new PlanCollector();
		const first = collector.add([item({ route: '/a', title: 'First A' }), item({ route: '/b' }), item({ route: '/A/', title: 'Second A' })]);
		const second = collector.add([item({ route: '/b' }), item({ route: '/c' })]);
		expect(collector.pages.map((p) => [p.route, p.title])).toEqual([
			['/a', 'First A'],
			['/b', 'Combi Boiler Repair'],
			['/c', 'Combi Boiler Repair'],
		]);
		expect(first).toMatchObject({ received: 3, accepted: 2, dropped: { duplicate: 1 } });
		expect(second).toMatchObject({ received: 2, accepted: 1, dropped: { duplicate: 1 } });
		expect(collector.totals).toMatchObject({ received: 5, accepted: 3, dropped: { duplicate: 2 } });
	});

	it('drops routes the site already has, given as URLs or routes in any form', () => {
		const collector = new PlanCollector(['https://example.com/Services/Boiler-Repair/', '/about.html', 'https://example.com/İletişim']);
		const report = collector.add([
			item({ route: '/services/boiler-repair' }),
			item({ route: '/about' }),
			item({ route: '/iletisim' }),
			item({ route: '/services/new-page' }),
		]);
		expect(collector.pages.map((p) => p.route)).toEqual(['/services/new-page']);
		expect(report.dropped.existing_route).toBe(3);
		expect(collector.existingRoutes.has('/services/boiler-repair')).toBe(true);
	});

	it('counts repaired items and every drop reason in its report', () => {
		const collector = new PlanCollector(['/old']);
		const report = collector.add([item({ route: 'New Page' }), item(), null, item({ route: '/' }), item({ route: '/日本' }), item({ route: '/old' }), item()]);
		expect(report).toEqual({
			received: 7,
			accepted: 2,
			repaired: 1,
			dropped: { not_an_object: 1, invalid_route: 1, root_route: 1, route_too_long: 0, duplicate: 1, existing_route: 1 },
		});
	});

	it('throws a TypeError for existing routes that are not strings', () => {
		expect(() => new PlanCollector([42 as unknown as string])).toThrow(/existingRoutes must hold strings, received number/);
	});
});

describe('validatePlanPagesOutput', () => {
	it('accepts an answer with at least one usable page', () => {
		expect(validatePlanPagesOutput({ pages: [item({ route: '/' }), item()] })).toBeNull();
		expect(countUsablePages({ pages: [item({ route: '/' }), item(), item({ route: 'x y' })] })).toBe(2);
	});

	it('rejects an answer without pages or without a usable route', () => {
		expect(validatePlanPagesOutput({})).toMatch(/no "pages" array/);
		expect(validatePlanPagesOutput(null)).toMatch(/no "pages" array/);
		expect(validatePlanPagesOutput({ pages: [] })).toMatch(/no page with a usable route/);
		expect(validatePlanPagesOutput({ pages: [item({ route: '/' }), item({ route: '/日本' }), 'x'] })).toMatch(/no page with a usable route/);
	});
});

describe('repairPlanClusters', () => {
	it('repairs slugs and counts, derives missing slugs and names, and drops unusable or repeated clusters', () => {
		const { clusters, dropped } = repairPlanClusters({
			clusters: [
				{ name: 'Gas Boilers', slug: 'Gas Boilers', description: ' Repairs ', page_count: 12.4 },
				{ name: 'Radiators', slug: '', description: 'Heat', page_count: '5' },
				{ name: '', slug: 'underfloor-heating', description: 'Floors', page_count: -2 },
				{ name: '日本', slug: '日本', description: 'x', page_count: 3 },
				{ name: 'Gas boilers again', slug: 'gas-boilers', description: 'dup', page_count: 3 },
				'not a cluster',
			],
		});
		expect(clusters).toEqual([
			{ name: 'Gas Boilers', slug: 'gas-boilers', description: 'Repairs', page_count: 12 },
			{ name: 'Radiators', slug: 'radiators', description: 'Heat', page_count: 5 },
			{ name: 'Underfloor Heating', slug: 'underfloor-heating', description: 'Floors', page_count: 0 },
		]);
		expect(dropped).toBe(3);
	});

	it('validates that an answer holds at least one usable cluster', () => {
		expect(validatePlanClustersOutput({ clusters: [{ name: 'A', slug: 'a', description: '', page_count: 1 }] })).toBeNull();
		expect(validatePlanClustersOutput({ clusters: [] })).toMatch(/no cluster/);
		expect(validatePlanClustersOutput({ items: [] })).toMatch(/no "clusters" array/);
	});
});

describe('slugify', () => {
	it('makes one slug segment from any text', () => {
		expect(slugify('Pricing / Costs')).toBe('pricing-costs');
		expect(slugify('Kombi Bakımı')).toBe('kombi-bakimi');
		expect(slugify('???')).toBeNull();
	});
});
