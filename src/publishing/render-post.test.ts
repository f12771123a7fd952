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
	...overrides,
});

describe('renderPost', () => {
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
