import { describe, expect, it } from 'vitest';
import { structuredDataProblems } from '../../test/support/structured-data.ts';
import { ancestorsOf, buildStructuredData, pageUrl } from './structured-data.ts';

const input = {
	route: '/plumbing/leeds',
	title: 'Plumbing in Leeds',
	metaDescription: 'Plumbers in Leeds: prices, response times and what to check before you call one.',
	faq: [
		{ question: 'How fast?', answer: 'Within the hour.' },
		{ question: 'Blank answer?', answer: ' ' },
	],
	language: 'en-GB',
	websiteUrl: 'https://plumbers.example/',
	dateModified: '2026-05-01T09:30:00.000Z',
	ancestorTitles: new Map([['/plumbing', 'Plumbing services']]),
};

describe('buildStructuredData', () => {
	it('builds Article, FAQPage and BreadcrumbList from the post', () => {
		expect(buildStructuredData(input)).toEqual([
			{
				'@context': 'https://schema.org',
				'@type': 'Article',
				headline: 'Plumbing in Leeds',
				description: input.metaDescription,
				inLanguage: 'en-GB',
				url: 'https://plumbers.example/plumbing/leeds',
				mainEntityOfPage: 'https://plumbers.example/plumbing/leeds',
				dateModified: '2026-05-01T09:30:00.000Z',
			},
			{
				'@context': 'https://schema.org',
				'@type': 'FAQPage',
				mainEntity: [{ '@type': 'Question', name: 'How fast?', acceptedAnswer: { '@type': 'Answer', text: 'Within the hour.' } }],
			},
			{
				'@context': 'https://schema.org',
				'@type': 'BreadcrumbList',
				itemListElement: [
					{ '@type': 'ListItem', position: 1, name: 'plumbers.example', item: 'https://plumbers.example/' },
					{ '@type': 'ListItem', position: 2, name: 'Plumbing services', item: 'https://plumbers.example/plumbing' },
					{ '@type': 'ListItem', position: 3, name: 'Plumbing in Leeds', item: 'https://plumbers.example/plumbing/leeds' },
				],
			},
		]);
	});

	it('validates with a structured-data validator library, with and without an FAQ', async () => {
		expect(await structuredDataProblems(buildStructuredData(input), { faq: true })).toEqual([]);
		const plain = buildStructuredData({ ...input, faq: [] });
		expect(plain.map((node) => node['@type'])).toEqual(['Article', 'BreadcrumbList']);
		expect(await structuredDataProblems(plain, { faq: false })).toEqual([]);
	});

	it('the validator catches what rich results need: a missing answer, a relative URL, a headline too long', async () => {
		const [article, faq, breadcrumb] = buildStructuredData(input) as Record<string, any>[];
		const broken = [
			{ ...article, headline: 'x'.repeat(111), url: '/plumbing/leeds' },
			{ ...faq, mainEntity: [{ '@type': 'Question', name: 'No answer?' }] },
			{ ...breadcrumb, itemListElement: breadcrumb!.itemListElement.map((item: object, i: number) => ({ ...item, position: i + 2 })) },
		];
		const problems = await structuredDataProblems(broken, { faq: true });
		expect(problems).toEqual(
			expect.arrayContaining([
				expect.stringMatching(/^Article headline, at most 110 characters/),
				expect.stringMatching(/^Article absolute url/),
				expect.stringMatching(/^FAQPage: every Question named/),
			]),
		);
		expect(await structuredDataProblems([article, faq, broken[2]], { faq: true })).toEqual(['BreadcrumbList positions are 2, 3, 4, not 1, 2, 3...']);
	});

	it('names an ancestor without a plan page by its last segment, and the home page by the website\'s host', () => {
		const [, breadcrumb] = buildStructuredData({ ...input, faq: null, route: '/a/deep-cleaning/x', ancestorTitles: new Map(), websiteUrl: 'https://www.site.example' }) as Record<string, any>[];
		expect(breadcrumb!.itemListElement.map((item: { name: string; item: string }) => [item.name, item.item])).toEqual([
			['site.example', 'https://www.site.example/'],
			['A', 'https://www.site.example/a'],
			['Deep cleaning', 'https://www.site.example/a/deep-cleaning'],
			['Plumbing in Leeds', 'https://www.site.example/a/deep-cleaning/x'],
		]);
	});

	it('places the page\'s hub just above it when the hub is not an ancestor of its path', () => {
		const [, , breadcrumb] = buildStructuredData({ ...input, parentRoute: '/services/plumbing', ancestorTitles: new Map([['/plumbing', 'Plumbing services'], ['/services/plumbing', 'Plumbing hub']]) }) as Record<string, any>[];
		expect(breadcrumb!.itemListElement.map((item: { name: string }) => item.name)).toEqual(['plumbers.example', 'Plumbing services', 'Plumbing hub', 'Plumbing in Leeds']);
		const [, , same] = buildStructuredData({ ...input, parentRoute: '/plumbing' }) as Record<string, any>[];
		expect(same!.itemListElement).toHaveLength(3);
	});

	it('ancestorsOf and pageUrl', () => {
		expect(ancestorsOf('/a/b/c')).toEqual(['/', '/a', '/a/b']);
		expect(ancestorsOf('/a')).toEqual(['/']);
		expect(ancestorsOf('/')).toEqual([]);
		expect(pageUrl('https://x.example/blog/', '/a')).toBe('https://x.example/blog/a');
		expect(pageUrl('https://x.example', '/')).toBe('https://x.example/');
	});
});
