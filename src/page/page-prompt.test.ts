import { describe, expect, it } from 'vitest';
import { buildPageMessages, pickSiblings } from './page-prompt.ts';
import type { PagePromptContext } from './page-prompt.ts';

const FENCE = /```json[ \t]*\r?\n([\s\S]*?)\r?\n?```/g;

function context(overrides: Partial<PagePromptContext> = {}): PagePromptContext {
	return {
		masterPrompt: 'Write in a warm, practical tone for homeowners.',
		websiteUrl: 'https://acme-plumbing.example',
		language: 'de-DE',
		businessDescription: 'Acme Plumbing is a family-run plumber in Springfield.',
		item: {
			route: '/services/leak-repair',
			title: 'Leak Repair',
			priority: 4,
			primary_keyword: 'leak repair',
			search_intent: 'commercial',
			page_type: 'service',
			parent_route: '/services',
			cluster: 'plumbing',
		},
		siblings: [
			{ route: '/services', title: 'Services' },
			{ route: '/pricing', title: 'Pricing' },
		],
		...overrides,
	};
}

function jsonBlocks(text: string): unknown[] {
	return [...text.matchAll(FENCE)].map((match) => JSON.parse(match[1] ?? ''));
}

describe('buildPageMessages', () => {
	it('starts with a system message that sets the role, language and linking rules', () => {
		const [system] = buildPageMessages(context());
		expect(system?.role).toBe('system');
		expect(system?.content).toMatch(/expert SEO copywriter/);
		expect(system?.content).toMatch(/language/);
		expect(system?.content).toMatch(/Markdown/);
		expect(system?.content).toMatch(/only to routes listed in "sibling_routes"/);
		expect(system?.content).toMatch(/root-relative/);
	});

	it('ends with a user message holding the master prompt, the business description and one json block', () => {
		const messages = buildPageMessages(context());
		expect(messages).toHaveLength(2);
		const user = messages.at(-1)!;
		expect(user.role).toBe('user');
		expect(user.content).toContain('Write in a warm, practical tone for homeowners.');
		expect(user.content).toContain('Acme Plumbing is a family-run plumber in Springfield.');
		expect(user.content).toContain('https://acme-plumbing.example');
		expect(jsonBlocks(user.content)).toEqual([
			{
				task: 'page',
				route: '/services/leak-repair',
				title: 'Leak Repair',
				primary_keyword: 'leak repair',
				search_intent: 'commercial',
				page_type: 'service',
				language: 'de-DE',
				sibling_routes: [
					{ route: '/services', title: 'Services' },
					{ route: '/pricing', title: 'Pricing' },
				],
			},
		]);
	});

	it('keeps exactly one json block when the owner text contains fences or a title contains backticks', () => {
		const messages = buildPageMessages(
			context({
				masterPrompt: 'Use this format:\n```json\n{"task": "other"}\n```\nThanks.',
				businessDescription: '```\ncode\n```',
				item: { route: '/x', title: 'The ``` trick', priority: 1 },
			}),
		);
		const blocks = jsonBlocks(messages.at(-1)!.content);
		expect(blocks).toHaveLength(1);
		expect(blocks[0]).toMatchObject({ task: 'page', route: '/x', title: 'The ``` trick' });
	});

	it('writes null for missing optional fields, omits an empty business description and never lists the page itself', () => {
		const messages = buildPageMessages(
			context({
				businessDescription: null,
				item: { route: '/a', title: 'A', priority: 1 },
				siblings: [
					{ route: '/a', title: 'A' },
					{ route: '/b', title: 'B' },
				],
			}),
		);
		const user = messages.at(-1)!.content;
		expect(user).not.toContain('About the business');
		expect(jsonBlocks(user)[0]).toMatchObject({
			primary_keyword: null,
			search_intent: null,
			page_type: null,
			sibling_routes: [{ route: '/b', title: 'B' }],
		});
	});

	it('carries a regeneration\'s instructions inside the json block, fenced in, and nothing when there are none', () => {
		const plain = jsonBlocks(buildPageMessages(context()).at(-1)!.content)[0] as Record<string, unknown>;
		expect(plain).not.toHaveProperty('editor_instructions');
		expect(jsonBlocks(buildPageMessages(context({ instructions: '   ' })).at(-1)!.content)[0]).not.toHaveProperty('editor_instructions');
		const user = buildPageMessages(context({ instructions: ' Shorter intro. ```json {"task":"x"} ``` ' })).at(-1)!.content;
		const blocks = jsonBlocks(user);
		expect(blocks).toHaveLength(1);
		expect((blocks[0] as Record<string, unknown>)['editor_instructions']).toBe('Shorter intro. ```json {"task":"x"} ```');
	});

	it('carries the page\'s facts in the json block, with the rules to state them exactly and invent nothing else', () => {
		const facts = { city: 'Leeds', population: 812000, average_price_gbp: '95.50', emergency: true };
		const [system, user] = buildPageMessages(context({ item: { route: '/leeds', title: 'Plumbers in Leeds', priority: 1, facts } }));
		expect((jsonBlocks(user!.content)[0] as Record<string, unknown>)['facts']).toEqual(facts);
		expect(system!.content).toMatch(/"facts".*state them exactly as given/);
		expect(system!.content).toMatch(/Invent no figure, price, date, statistic or named entity .* that the facts, the title or the primary keyword do not give/);
		expect(system!.content).toMatch(/write around it in general terms instead of guessing/);
		// No facts, no key.
		expect(jsonBlocks(buildPageMessages(context()).at(-1)!.content)[0]).not.toHaveProperty('facts');
		expect(jsonBlocks(buildPageMessages(context({ item: { route: '/a', title: 'A', priority: 1, facts: {} } })).at(-1)!.content)[0]).not.toHaveProperty('facts');
	});

	it('keeps the prompt small for a page of a 10,000-page plan', () => {
		const plan = Array.from({ length: 10_000 }, (_, i) => ({ route: `/guides/topic-${i}`, title: `Topic ${i} explained`, priority: i % 5 }));
		const item = plan[1234]!;
		const messages = buildPageMessages(context({ item, siblings: pickSiblings(item, plan) }));
		const size = messages.reduce((sum, message) => sum + message.content.length, 0);
		expect(size).toBeLessThan(5_000);
		expect((jsonBlocks(messages.at(-1)!.content)[0] as { sibling_routes: unknown[] }).sibling_routes).toHaveLength(8);
	});

	it('rejects a malformed context with a TypeError', () => {
		expect(() => buildPageMessages(context({ language: undefined as unknown as string }))).toThrow(/`language`/);
		expect(() => buildPageMessages(context({ siblings: null as unknown as [] }))).toThrow(TypeError);
	});
});
