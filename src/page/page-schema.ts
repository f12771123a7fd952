/** One generated page, as the provider returns it (after {@link validatePageOutput} has checked and tidied it). */
export interface PageOutput {
	title: string;
	meta_title: string;
	meta_description: string;
	h1: string;
	body_markdown: string;
	faq: { question: string; answer: string }[];
	internal_links: { anchor: string; route: string }[];
}

/** The json_schema name of a page request. */
export const PAGE_SCHEMA_NAME = 'pseo_page';

const text = (description: string) => ({ type: 'string', description });

/**
 * The strict json_schema of a page: every property required, no additional properties. Lengths and link targets
 * are left to our own validator, because several OpenAI-compatible servers reject or ignore string constraints.
 */
export const PAGE_SCHEMA: Readonly<Record<string, unknown>> = deepFreeze({
	type: 'object',
	properties: {
		title: text('The page title.'),
		meta_title: text('The HTML <title>, about 50 to 60 characters.'),
		meta_description: text('The meta description, about 120 to 160 characters.'),
		h1: text('The main heading of the page.'),
		body_markdown: text('The page body in Markdown, without the H1. Internal links are root-relative, e.g. [anchor](/route).'),
		faq: {
			type: 'array',
			description: 'Frequently asked questions about the topic of the page.',
			items: {
				type: 'object',
				properties: { question: text('A question.'), answer: text('Its answer.') },
				required: ['question', 'answer'],
				additionalProperties: false,
			},
		},
		internal_links: {
			type: 'array',
			description: 'The internal links used in the body; routes only from the given sibling routes.',
			items: {
				type: 'object',
				properties: { anchor: text('The link text.'), route: text('The root-relative route linked to.') },
				required: ['anchor', 'route'],
				additionalProperties: false,
			},
		},
	},
	required: ['title', 'meta_title', 'meta_description', 'h1', 'body_markdown', 'faq', 'internal_links'],
	additionalProperties: false,
});

function deepFreeze<T>(value: T): T {
	if (typeof value === 'object' && value !== null) {
		for (const inner of Object.values(value)) deepFreeze(inner);
		Object.freeze(value);
	}
	return value;
}
