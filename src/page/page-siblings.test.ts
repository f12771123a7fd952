import { describe, expect, it } from 'vitest';
import { createSiblingPicker, MAX_SIBLINGS, pickSiblings } from './page-siblings.ts';
import type { PlanPage } from '../plan/plan-page.ts';

function page(route: string, extra: Partial<PlanPage> = {}): PlanPage {
	const slug = route.split('/').filter(Boolean).pop() ?? 'home';
	return { route, title: slug.replace(/-/g, ' '), priority: 3, ...extra };
}

const PLAN: PlanPage[] = [
	page('/', { priority: 5, title: 'Home' }),
	page('/services', { priority: 5 }),
	page('/services/plumbing', { priority: 4, cluster: 'plumbing', primary_keyword: 'plumber' }),
	page('/services/plumbing/leak-repair', { cluster: 'plumbing', primary_keyword: 'leak repair' }),
	page('/services/plumbing/drain-unblocking', { cluster: 'plumbing', primary_keyword: 'blocked drain' }),
	page('/services/plumbing/boiler-service', { cluster: 'heating', primary_keyword: 'boiler service' }),
	page('/services/electrical', { priority: 4, cluster: 'electrical' }),
	page('/services/electrical/rewiring', { cluster: 'electrical', primary_keyword: 'house rewiring' }),
	page('/blog/how-to-find-a-leak', { cluster: 'blog', primary_keyword: 'find water leak' }),
	page('/blog/garden-ideas', { priority: 1, cluster: 'blog', primary_keyword: 'garden design' }),
	page('/about', { priority: 2 }),
];

const routes = (siblings: { route: string }[]) => siblings.map((s) => s.route);

describe('pickSiblings', () => {
	it('never returns the page itself and returns at most n pages', () => {
		for (const item of PLAN) {
			const picked = pickSiblings(item, PLAN, 4);
			expect(picked.length).toBe(4);
			expect(routes(picked)).not.toContain(item.route);
			expect(new Set(routes(picked)).size).toBe(picked.length);
		}
	});

	it('puts the parent, the same-cluster pages under the same parent and keyword matches first', () => {
		const leak = PLAN[3]!;
		const picked = routes(pickSiblings(leak, PLAN, 4));
		expect(picked[0]).toBe('/services/plumbing');
		expect(picked.slice(1, 3).sort()).toEqual(['/services/plumbing/boiler-service', '/services/plumbing/drain-unblocking']);
		expect(picked).not.toContain('/blog/garden-ideas');
		// A page sharing a rare keyword ("leak") outranks pages that only share a path segment; unrelated pages stay out.
		const eight = routes(pickSiblings(leak, PLAN, 8));
		expect(eight.indexOf('/blog/how-to-find-a-leak')).toBeGreaterThan(0);
		expect(eight.indexOf('/blog/how-to-find-a-leak')).toBeLessThan(eight.indexOf('/services/electrical'));
		// The grandparent hub ranks above a cousin section.
		expect(eight.indexOf('/services')).toBeLessThan(eight.indexOf('/services/electrical'));
		expect(eight).not.toContain('/blog/garden-ideas');
	});

	it('offers a hub page its children', () => {
		const picked = routes(pickSiblings(PLAN[2]!, PLAN, 4));
		// Children in the same cluster first, then the other child and the parent.
		expect(picked.slice(0, 2).sort()).toEqual(['/services/plumbing/drain-unblocking', '/services/plumbing/leak-repair']);
		expect(picked.slice(2).sort()).toEqual(['/services', '/services/plumbing/boiler-service']);
	});

	it('uses explicit parent_route and cluster when routes are flat', () => {
		const flat = [
			page('/crm-software', { priority: 5 }),
			page('/crm-for-dentists', { parent_route: '/crm-software' }),
			page('/crm-for-lawyers', { parent_route: '/crm-software' }),
			page('/best-pizza-recipes', { priority: 5, cluster: 'food' }),
			page('/pasta-recipes', { cluster: 'food' }),
		];
		expect(routes(pickSiblings(flat[1]!, flat, 2))).toEqual(['/crm-software', '/crm-for-lawyers']);
		expect(routes(pickSiblings(flat[4]!, flat, 1))).toEqual(['/best-pizza-recipes']);
	});

	it('fills up with the highest-priority pages when few pages are related', () => {
		const picked = routes(pickSiblings(PLAN[10]!, PLAN, 3));
		expect(picked).toEqual(['/', '/services', '/services/electrical']);
	});

	it('is deterministic and handles duplicates in the plan', () => {
		const withDuplicates = [...PLAN, page('/services/plumbing', { title: 'Duplicate' })];
		const a = pickSiblings(PLAN[4]!, withDuplicates, 8);
		const b = pickSiblings(PLAN[4]!, [...withDuplicates], 8);
		expect(a).toEqual(b);
		expect(routes(a).filter((r) => r === '/services/plumbing')).toHaveLength(1);
	});

	it('works for a page that is not in the plan and for an empty plan', () => {
		expect(routes(pickSiblings(page('/services/plumbing/new-page'), PLAN, 1))).toEqual(['/services/plumbing']);
		expect(pickSiblings(PLAN[0]!, [], 8)).toEqual([]);
		expect(pickSiblings(PLAN[0]!, PLAN, 0)).toEqual([]);
	});

	it('rejects a bad n with a TypeError naming it', () => {
		expect(() => pickSiblings(PLAN[0]!, PLAN, -1)).toThrow(new TypeError('Expected `n` to be an integer from 0 to 50, got `-1` (number)'));
		expect(() => pickSiblings(PLAN[0]!, PLAN, MAX_SIBLINGS + 1)).toThrow(TypeError);
		expect(() => pickSiblings(PLAN[0]!, PLAN, 2.5)).toThrow(TypeError);
	});

	it('shortens very long titles', () => {
		const plan = [page('/a'), page('/b', { title: 'word '.repeat(100) })];
		const [sibling] = pickSiblings(plan[0]!, plan, 1);
		expect(sibling!.title.length).toBeLessThanOrEqual(120);
	});

	it('stays fast and bounded for every page of a 10,000-page plan', () => {
		const big: PlanPage[] = [];
		for (let c = 0; c < 20; c++) {
			for (let i = 0; i < 500; i++) {
				big.push(page(`/topic-${c}/page-${i}`, { cluster: `cluster ${c}`, primary_keyword: `topic ${c} guide number ${i % 37} cost`, priority: 1 + (i % 5) }));
			}
		}
		const started = performance.now();
		const pick = createSiblingPicker(big);
		let total = 0;
		for (const item of big) {
			const picked = pick(item);
			expect(picked.length).toBe(8);
			total += picked.length;
			if (picked.some((s) => s.route === item.route)) throw new Error(`self-link for ${item.route}`);
		}
		const elapsed = performance.now() - started;
		expect(total).toBe(80_000);
		expect(elapsed).toBeLessThan(15_000);
		// Same section and cluster come first.
		expect(pick(big[42]!).every((s) => s.route.startsWith('/topic-0/'))).toBe(true);
	});
});
