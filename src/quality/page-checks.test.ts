import { describe, expect, it } from 'vitest';
import {
	checkHeadings,
	checkInternalLinks,
	checkKeyword,
	checkMeta,
	checkSimilarity,
	checkWords,
	readableWords,
	type CheckedPage,
} from './page-checks.ts';

const filler = (count: number) => Array.from({ length: count }, (_, i) => `word${i}`).join(' ');

function page(overrides: Partial<CheckedPage> = {}): CheckedPage {
	return {
		title: 'Emergency Plumber in Leeds',
		meta_title: 'Emergency Plumber in Leeds: Prices and Tips',
		meta_description: 'Find an emergency plumber in Leeds fast: what a call-out costs, what to ask on the phone and how to avoid the most common and costly mistakes.',
		h1: 'Emergency Plumber in Leeds',
		body: `An emergency plumber in Leeds can be at your door within the hour. ${filler(20)}\n\n## Prices\n\n${filler(50)} See [boilers](/boilers).\n\n### Call-out fees\n\n${filler(30)}`,
		faq: [{ question: 'How fast?', answer: 'Within the hour.' }],
		...overrides,
	};
}

const checks = (issues: { check: string; severity: string }[]) => issues.map((found) => `${found.check}:${found.severity}`);

describe('readableWords', () => {
	it('counts the body and the FAQ, without link targets or Markdown syntax', () => {
		expect(readableWords(page({ body: '## Hello world\n\nSee [our boilers](/boilers/combi "Combi") and ![a photo](/img/x.png).', faq: [{ question: 'Why?', answer: 'Because.' }] }))).toEqual([
			'hello',
			'world',
			'see',
			'our',
			'boilers',
			'and',
			'a',
			'photo',
			'why',
			'because',
		]);
	});
});

describe('checkWords', () => {
	it('fails a page under the minimum and names both counts', () => {
		expect(checkWords(page({ body: filler(120), faq: [] }), 300)).toEqual([{ check: 'words', severity: 'fail', detail: '120 words; at least 300 are needed' }]);
	});

	it('passes a page at the minimum, FAQ included', () => {
		expect(checkWords(page({ body: filler(290), faq: [{ question: 'a b c d e', answer: 'f g h i j' }] }), 300)).toEqual([]);
	});
});

describe('checkHeadings', () => {
	it('passes the H1 field with a body of ## and ###', () => {
		expect(checkHeadings(page())).toEqual([]);
	});

	it('fails a page without an H1, and a body that adds H1s', () => {
		expect(checks(checkHeadings(page({ h1: ' ' })))).toEqual(['h1:fail']);
		const doubled = checkHeadings(page({ body: '# Another title\n\ntext\n\n# And one more\n\ntext' }));
		expect(doubled).toEqual([{ check: 'h1', severity: 'fail', detail: 'the body has 2 more H1 headings; a page has exactly one H1' }]);
	});

	it('warns on a skipped level, once', () => {
		expect(checkHeadings(page({ body: '## Prices\n\ntext\n\n#### Details\n\ntext\n\n###### Deeper' }))).toEqual([
			{ check: 'outline', severity: 'warn', detail: '"Details" is an H4 after an H2; a level is skipped' },
		]);
		expect(checks(checkHeadings(page({ body: '### Starts too deep\n\ntext' })))).toEqual(['outline:warn']);
	});

	it('ignores # lines inside fenced code, and warns on a long body without subheadings', () => {
		expect(checkHeadings(page({ body: `## Setup\n\n\`\`\`sh\n# a shell comment\n\`\`\`\n\n${filler(10)}` }))).toEqual([]);
		expect(checks(checkHeadings(page({ body: filler(320) })))).toEqual(['outline:warn']);
	});
});

describe('checkMeta', () => {
	it('passes lengths a search result shows whole', () => {
		expect(checkMeta(page())).toEqual([]);
	});

	it('warns on a short or long meta title and description, with their lengths', () => {
		const found = checkMeta(page({ meta_title: 'Plumber', meta_description: 'x'.repeat(170) }));
		expect(found).toEqual([
			{ check: 'meta_title', severity: 'warn', detail: '7 characters; 30 to 60 fit a search result' },
			{ check: 'meta_description', severity: 'warn', detail: '170 characters; 120 to 160 fit a snippet' },
		]);
		expect(checks(checkMeta(page({ meta_title: null, meta_description: null })))).toEqual(['meta_title:warn', 'meta_description:warn']);
	});
});

describe('checkKeyword', () => {
	it('finds the keyword in the title, the H1 and the opening, whatever the case and accents', () => {
		expect(checkKeyword(page(), 'Emergency PLUMBER in leeds')).toEqual([]);
		expect(checkKeyword(page({ title: 'Café Prices', h1: 'Cafe prices', body: 'Our café prices, explained.' }), 'cafe prices')).toEqual([]);
	});

	it('names every place the keyword is missing from', () => {
		const found = checkKeyword(page({ h1: 'Plumbers', body: `${filler(120)} emergency plumber in leeds` }), 'emergency plumber in leeds');
		expect(found).toEqual([{ check: 'keyword', severity: 'warn', detail: '"emergency plumber in leeds" is missing from the H1 and the first 100 words' }]);
	});

	it('wants the keyword words in order, and checks nothing without a keyword', () => {
		expect(checks(checkKeyword(page(), 'leeds plumber'))).toEqual(['keyword:warn']);
		expect(checkKeyword(page(), null)).toEqual([]);
		expect(checkKeyword(page(), '  ')).toEqual([]);
	});
});

describe('checkInternalLinks', () => {
	const plan = new Set(['/plumber-leeds', '/boilers/', '/prices']);

	it('passes links that resolve to other routes of the plan, trailing slash or not', () => {
		expect(checkInternalLinks(page(), plan, '/plumber-leeds')).toEqual([]);
	});

	it('warns on links outside the plan or to the page itself, but not on images or other hosts', () => {
		const body = 'See [a](/nowhere), [b](/plumber-leeds/#top), [c](/boilers?x=1), ![d](/img.png) and [e](//other.example/x).';
		expect(checkInternalLinks(page({ body }), plan, '/plumber-leeds')).toEqual([
			{ check: 'internal_links', severity: 'warn', detail: 'links that are not other routes of the plan: /nowhere, /plumber-leeds' },
		]);
	});

	it('warns on a page without internal links when the plan has other pages, not when it has none', () => {
		expect(checkInternalLinks(page({ body: 'No links here.' }), plan, '/plumber-leeds')).toEqual([
			{ check: 'internal_links', severity: 'warn', detail: 'no link to another page of the plan' },
		]);
		expect(checkInternalLinks(page({ body: 'No links here.' }), new Set(['/plumber-leeds']), '/plumber-leeds')).toEqual([]);
	});
});

describe('checkSimilarity', () => {
	it('fails a page above the maximum and names the other route', () => {
		expect(checkSimilarity({ route: '/twin', score: 0.875 }, 0.8)).toEqual([
			{ check: 'near_duplicate', severity: 'fail', detail: '88% similar to /twin; at most 80% is allowed' },
		]);
	});

	it('passes a page at or under the maximum, or with no similar post', () => {
		expect(checkSimilarity({ route: '/twin', score: 0.8 }, 0.8)).toEqual([]);
		expect(checkSimilarity(null, 0.8)).toEqual([]);
	});
});
