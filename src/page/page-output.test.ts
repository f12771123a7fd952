import { describe, expect, it } from 'vitest';
import { makeValidator, META_DESCRIPTION_MAX, validatePageOutput } from './page-output.ts';

const PLAN = new Set(['/', '/pricing', '/services/plumbing', '/services/plumbing/leaks', '/blog/']);
const META = 'Find a licensed plumber for leaks, blocked drains and boiler repairs, with fixed prices and same-day visits.';

function output(overrides: Record<string, unknown> = {}): Record<string, unknown> {
	return {
		title: 'Leak Repair',
		meta_title: 'Leak Repair | Acme Plumbing',
		meta_description: META,
		h1: 'Leak Repair in Springfield',
		body_markdown: '## Why leaks matter\n\nSee our [plumbing services](/services/plumbing) and [prices](/pricing).',
		faq: [{ question: 'How fast can you come?', answer: 'Usually the same day.' }],
		internal_links: [
			{ anchor: 'plumbing services', route: '/services/plumbing' },
			{ anchor: 'prices', route: '/pricing' },
		],
		...overrides,
	};
}

describe('validatePageOutput', () => {
	it('accepts a good page unchanged', () => {
		const value = output();
		expect(validatePageOutput(value, PLAN, '/services/plumbing/leaks')).toEqual({ ok: true, page: value });
	});

	it('rejects a value that is not an object', () => {
		for (const value of [null, 'page', [output()], 3]) {
			expect(validatePageOutput(value, PLAN)).toEqual({ ok: false, error: 'output is not a JSON object' });
		}
	});

	it('rejects an empty or missing title and body', () => {
		expect(validatePageOutput(output({ title: '   ' }), PLAN)).toEqual({ ok: false, error: 'title is empty' });
		expect(validatePageOutput(output({ title: 7 }), PLAN)).toEqual({ ok: false, error: 'title is empty' });
		expect(validatePageOutput(output({ body_markdown: '\n\n' }), PLAN)).toEqual({ ok: false, error: 'body_markdown is empty' });
		expect(validatePageOutput(output({ body_markdown: undefined }), PLAN)).toEqual({ ok: false, error: 'body_markdown is empty' });
	});

	it('rejects a meta description shorter than 50 characters', () => {
		expect(validatePageOutput(output({ meta_description: 'Leak repair.' }), PLAN)).toEqual({
			ok: false,
			error: 'meta_description has 12 characters; at least 50 are needed',
		});
		expect(validatePageOutput(output({ meta_description: 'x'.repeat(50) }), PLAN).ok).toBe(true);
	});

	it('cuts a meta description longer than 170 characters at a word, to at most 160', () => {
		const long = `${META} ${META}`;
		expect(long.length).toBeGreaterThan(META_DESCRIPTION_MAX);
		const result = validatePageOutput(output({ meta_description: long }), PLAN);
		if (!result.ok) throw new Error(result.error);
		expect(result.page.meta_description.length).toBeLessThanOrEqual(160);
		expect(result.page.meta_description.endsWith('…')).toBe(true);
		expect(long.startsWith(result.page.meta_description.slice(0, -1))).toBe(true);
		expect(long.charAt(result.page.meta_description.length - 1)).toBe(' ');
		const exact = 'y'.repeat(META_DESCRIPTION_MAX);
		expect(validatePageOutput(output({ meta_description: exact }), PLAN)).toMatchObject({ ok: true, page: { meta_description: exact } });
	});

	it('drops internal links outside the plan, to the page itself, duplicates and empty anchors', () => {
		const result = validatePageOutput(
			output({
				internal_links: [
					{ anchor: 'prices', route: '/pricing' },
					{ anchor: 'made up', route: '/does-not-exist' },
					{ anchor: 'this page', route: '/services/plumbing/leaks' },
					{ anchor: 'prices again', route: '/pricing/' },
					{ anchor: '  ', route: '/services/plumbing' },
					{ anchor: 'absolute', route: 'https://example.com/pricing' },
					{ anchor: 'blog', route: '/blog' },
					'junk',
				],
			}),
			PLAN,
			'/services/plumbing/leaks/',
		);
		if (!result.ok) throw new Error(result.error);
		// Routes come back spelled as the plan spells them.
		expect(result.page.internal_links).toEqual([
			{ anchor: 'prices', route: '/pricing' },
			{ anchor: 'blog', route: '/blog/' },
		]);
	});

	it('turns body links to routes outside the plan or to the page itself into plain text', () => {
		const body = [
			'Read [our prices](/pricing#table) and [the leak guide](/services/plumbing/leaks).',
			'Avoid [fake pages](/nowhere "Nowhere") and [this one](/services/plumbing/leaks/).',
			'External [docs](https://example.org/x), protocol-relative [cdn](//cdn.example.org/a) and ![a pipe](/images/pipe.png) stay.',
		].join('\n');
		const result = validatePageOutput(output({ body_markdown: body }), PLAN, '/services/plumbing/leaks');
		if (!result.ok) throw new Error(result.error);
		expect(result.page.body_markdown).toBe(
			[
				'Read [our prices](/pricing#table) and the leak guide.',
				'Avoid fake pages and this one.',
				'External [docs](https://example.org/x), protocol-relative [cdn](//cdn.example.org/a) and ![a pipe](/images/pipe.png) stay.',
			].join('\n'),
		);
	});

	it('falls back to the title for an empty meta_title or h1, drops empty FAQ entries, tolerates missing lists and trims', () => {
		const result = validatePageOutput(
			{
				title: '  Leak\n Repair ',
				meta_title: '',
				meta_description: `  ${META}  `,
				h1: null,
				body_markdown: '\nBody text.\n',
				faq: [{ question: 'Q?', answer: '' }, { question: ' Real? ', answer: ' Yes. ' }, null],
			},
			PLAN,
		);
		expect(result).toEqual({
			ok: true,
			page: {
				title: 'Leak Repair',
				meta_title: 'Leak Repair',
				meta_description: META,
				h1: 'Leak Repair',
				body_markdown: 'Body text.',
				faq: [{ question: 'Real?', answer: 'Yes.' }],
				internal_links: [],
			},
		});
	});
});

describe('validatePageOutput and NUL characters', () => {
	it('drops NUL characters from every text it keeps, which PostgreSQL cannot store', () => {
		const nul = '\u0000';
		const result = validatePageOutput(
			{
				title: `Boiler${nul} repair`,
				meta_title: `Meta${nul}`,
				meta_description: `A description of boiler repair in Leeds that is long enough to be kept by the check${nul}.`,
				h1: `Heading${nul}`,
				body_markdown: `## Costs${nul}\n\nText with a NUL${nul} inside.`,
				faq: [{ question: `Why${nul}?`, answer: `Because${nul}.` }],
				internal_links: [],
			},
			new Set(['/a']),
		);
		expect(result.ok).toBe(true);
		if (!result.ok) return;
		expect(JSON.stringify(result.page)).not.toContain('\\u0000');
		expect(result.page).toMatchObject({ title: 'Boiler repair', meta_title: 'Meta', h1: 'Heading', body_markdown: '## Costs\n\nText with a NUL inside.', faq: [{ question: 'Why?', answer: 'Because.' }] });
	});
});

describe('makeValidator', () => {
	it('returns null for an acceptable page and the reason for an unusable one', () => {
		const validate = makeValidator(PLAN, '/services/plumbing/leaks');
		expect(validate(output())).toBeNull();
		expect(validate(output({ internal_links: [{ anchor: 'x', route: '/nope' }] }))).toBeNull();
		expect(validate(output({ meta_description: 'short' }))).toBe('meta_description has 5 characters; at least 50 are needed');
		expect(validate('nope')).toBe('output is not a JSON object');
	});

	it('follows the set when routes are added to it', () => {
		const routes = new Set(['/a']);
		const validate = (value: unknown) => validatePageOutput(value, routes);
		const page = output({ internal_links: [{ anchor: 'b', route: '/b' }] });
		expect(validate(page)).toMatchObject({ ok: true, page: { internal_links: [] } });
		routes.add('/b');
		expect(validate(page)).toMatchObject({ ok: true, page: { internal_links: [{ anchor: 'b', route: '/b' }] } });
	});
});
