import { describe, expect, it } from 'vitest';
import { markerComment, markerOf, publishedHash, renderPost, slugOf, type PublishablePost } from './render-post.ts';

const post = (overrides: Partial<PublishablePost> = {}): PublishablePost => ({
	id: 7,
	pseoId: 3,
	route: '/plumbing/lyon',
	title: 'Plumbing in Lyon',
	metaTitle: 'Plumbers in Lyon',
	metaDescription: 'Find a plumber in Lyon today.',
	h1: 'Plumbing in Lyon',
	body: '## Why\n\nSee [our Paris page](/plumbing/paris) and [Marseille](/plumbing/marseille#prices) or [docs](https://example.org/a).',
	faq: [{ question: 'How fast?', answer: 'Within **an hour**.' }],
	cluster: 'Plumbing',
	facts: null,
	structuredData: null,
	...overrides,
});

describe('renderPost', () => {
	it('ends a hub\'s page with a link to every page of its set that the site has, escaped', () => {
		const hubSet = [
			{ route: '/plumbing/york', title: 'Plumbing in York' },
			{ route: '/plumbing/hull', title: 'Hull & "more"' },
			{ route: '/plumbing/nowhere', title: 'Not on the site' },
		];
		const urls = new Map([
			['/plumbing/york', 'https://x.example/plumbing/york'],
			['/plumbing/hull', 'https://x.example/plumbing/hull'],
		]);
		const content = renderPost(post(), (route) => urls.get(route) ?? null, { hubSet }).content;
		expect(content).toContain(
			'<ul class="pseo-hub-links">\n<li><a href="https://x.example/plumbing/york">Plumbing in York</a></li>\n<li><a href="https://x.example/plumbing/hull">Hull &amp; &quot;more&quot;</a></li>\n</ul>',
		);
		expect(content).not.toContain('Not on the site');
		expect(renderPost(post(), () => null, { hubSet }).content).not.toContain('pseo-hub-links');
	});

	it('carries the JSON-LD as a script block when asked, so that no text of it can close the block', () => {
		const structuredData = [{ '@context': 'https://schema.org', '@type': 'Article', headline: 'A </script><b>', url: 'https://x.example/a' }];
		const rendered = renderPost(post({ structuredData }), () => null, { structuredData: 'script' }).content;
		const block = /<script type="application\/ld\+json">([\s\S]*?)<\/script>/.exec(rendered);
		expect(JSON.parse(block![1]!)).toEqual(structuredData);
		expect(block![1]).not.toContain('</');
		expect(renderPost(post({ structuredData }), () => null).content).not.toContain('<script');
	});

	it('appends the data block: a table of the facts, labelled from the column names, escaped; none when asked, or without facts', () => {
		const facts = { city: 'Lyon', average_price_eur: '95.50', population: 522000, open_sundays: true, note: '<b>"a" & b</b>' };
		const rendered = renderPost(post({ facts }), () => null).content;
		expect(rendered).toContain(
			[
				'<table class="pseo-facts">',
				'<tbody>',
				'<tr><th scope="row">City</th><td>Lyon</td></tr>',
				'<tr><th scope="row">Average price eur</th><td>95.50</td></tr>',
				'<tr><th scope="row">Population</th><td>522000</td></tr>',
				'<tr><th scope="row">Open sundays</th><td>✓</td></tr>',
				'<tr><th scope="row">Note</th><td>&lt;b&gt;&quot;a&quot; &amp; b&lt;/b&gt;</td></tr>',
				'</tbody>',
				'</table>',
			].join('\n'),
		);
		// After the page and its FAQ, before the marker.
		expect(rendered.indexOf('Frequently asked questions')).toBeLessThan(rendered.indexOf('pseo-facts'));
		expect(rendered.indexOf('pseo-facts')).toBeLessThan(rendered.indexOf('pseo_ref_3_7'));
		expect(renderPost(post({ facts }), () => null, { factsDisplay: 'none' }).content).not.toContain('<table');
		expect(renderPost(post(), () => null).content).not.toContain('<table');
	});

	it('renders Markdown to HTML with the FAQ, the marker, the slug and the excerpt', () => {
		const rendered = renderPost(post(), () => null);
		expect(rendered.content).toContain('<h2>Why</h2>');
		expect(rendered.content).toContain('<h2>Frequently asked questions</h2>\n<h3>How fast?</h3>');
		expect(rendered.content).toContain('<strong>an hour</strong>');
		expect(rendered.content).toContain(markerComment(markerOf({ pseoId: 3, id: 7 })));
		expect(markerComment(markerOf({ pseoId: 3, id: 7 }))).toBe('<!-- pseo_ref_3_7 -->');
		// Post 70's content holds post 7's marker as a prefix, never its comment.
		const seventy = renderPost(post({ id: 70 }), () => null).content;
		expect(seventy).toContain(markerOf({ pseoId: 3, id: 7 }));
		expect(seventy).not.toContain(markerComment(markerOf({ pseoId: 3, id: 7 })));
		expect(rendered.slug).toBe('plumbing-lyon');
		expect(rendered.excerpt).toBe('Find a plumber in Lyon today.');
		expect(rendered.categories).toEqual(['Plumbing']);
	});

	it('points internal links where the resolver says, and leaves unresolved ones as text', () => {
		const urls = new Map([['/plumbing/paris', 'http://wp.test/?p=12']]);
		const rendered = renderPost(post(), (route) => urls.get(route) ?? null);
		expect(rendered.content).toContain('<a href="http://wp.test/?p=12">our Paris page</a>');
		expect(rendered.content).not.toContain('/plumbing/marseille');
		expect(rendered.content).toContain('Marseille');
		expect(rendered.content).toContain('<a href="https://example.org/a">docs</a>');
	});

	it('never injects raw HTML or script links from the Markdown', () => {
		const rendered = renderPost(
			post({ body: 'Hi <script>alert(1)</script> <img src=x onerror=alert(2)>\n\n[click](javascript:alert(3))\n\n<div onclick="x()">raw</div>' }),
			() => null,
		);
		expect(rendered.content).not.toMatch(/<script|<img|<div|javascript:/i);
		expect(rendered.content).toContain('&lt;script&gt;');
		expect(rendered.content).toContain('click');
	});

	it('hashes what the site receives: the same input twice is equal, another status or link is not', () => {
		const a = renderPost(post(), () => null);
		const b = renderPost(post(), () => null);
		const linked = renderPost(post(), (route) => `http://wp.test${route}`);
		expect(publishedHash(a, { status: 'draft', date: null })).toBe(publishedHash(b, { status: 'draft', date: null }));
		expect(publishedHash(a, { status: 'draft', date: null })).not.toBe(publishedHash(a, { status: 'publish', date: null }));
		expect(publishedHash(a, { status: 'draft', date: null })).not.toBe(publishedHash(linked, { status: 'draft', date: null }));
	});
});

describe('slugOf', () => {
	it('joins segments, folds case and keeps letters of any script', () => {
		expect(slugOf('/Services/Plumbing')).toBe('services-plumbing');
		expect(slugOf('/kraków/hydraulik')).toBe('kraków-hydraulik');
		expect(slugOf('/')).toBe('home');
		expect(slugOf('/a b/c_d/')).toBe('a-b-c-d');
	});
});
