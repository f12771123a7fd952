import { z } from 'zod';
import { PROVIDER_KINDS } from '../shared/provider-kinds.ts';
import type { NewWebsite } from '../websites/create-website.ts';
import { doc, named } from './contract-registry.ts';
import { message, success } from './envelope.ts';
import { count, Identifier, objectError, requiredOr, rule } from './field-rules.ts';
import { defineRoute } from './route-contract.ts';

const MAX_URL_LENGTH = 2048;
const MAX_SOFTWARE_LENGTH = 100;
const MAX_MODEL_LENGTH = 200;

const parseUrl = (value: string): URL | null => URL.parse(value.trim());

const websiteUrl = z
	.string({ error: requiredOr('must be a string.') })
	.refine((value) => value.trim().length <= MAX_URL_LENGTH, { error: rule(`must be at most ${MAX_URL_LENGTH} characters.`), abort: true })
	.refine((value) => parseUrl(value) !== null, { error: rule('must be an absolute http(s) URL, such as https://example.com.'), abort: true })
	.refine((value) => ['http:', 'https:'].includes(parseUrl(value)!.protocol), { error: rule('must use http or https.'), abort: true })
	.refine((value) => parseUrl(value)!.hostname !== '', { error: rule('must name a host.'), abort: true })
	.refine((value) => !parseUrl(value)!.username && !parseUrl(value)!.password, { error: rule('must not contain credentials.') })
	.transform((value) => value.trim());

/** The body of POST /pseo (interface 4.3); unknown fields are refused. */
const NewWebsiteBody = named(
	'NewWebsite',
	z
		.strictObject(
			{
				website_url: doc(websiteUrl, {
					maxLength: MAX_URL_LENGTH,
					description: 'Absolute http(s) URL of the website, without credentials.',
					examples: ['https://bakery.example'],
				}),
				master_prompt: doc(
					z.string({ error: requiredOr('must be a string.') }).refine((value) => value.trim().length > 0, { error: rule('must not be empty.') }),
					{ minLength: 1, description: 'Instructions guiding the AI for every page of this website; not blank.', examples: ['Warm, expert tone. Short paragraphs.'] },
				),
				website_software: doc(
					doc(
						z
							.string({ error: rule('must be a string.') })
							.refine((value) => value.trim().length > 0, { error: rule('must not be empty.'), abort: true })
							.refine((value) => value.trim().length <= MAX_SOFTWARE_LENGTH, { error: rule(`must be at most ${MAX_SOFTWARE_LENGTH} characters.`) }),
						{ minLength: 1, maxLength: MAX_SOFTWARE_LENGTH },
					).nullish(),
					{ default: 'wordpress', description: 'CMS or platform identifier.', examples: ['wordpress'] },
				),
				provider: doc(z.enum(PROVIDER_KINDS, { error: rule(`must be one of ${PROVIDER_KINDS.join(', ')}.`) }).nullish(), {
					description: "The AI provider of the website's plans and pages; omitted or null, the instance's default (Settings → AI, or PSEO_PROVIDER).",
					examples: ['anthropic'],
				}),
				model: doc(
					doc(
						z
							.string({ error: rule('must be a string.') })
							.refine((value) => value.trim().length > 0, { error: rule('must not be empty.'), abort: true })
							.refine((value) => value.trim().length <= MAX_MODEL_LENGTH, { error: rule(`must be at most ${MAX_MODEL_LENGTH} characters.`) }),
						{ minLength: 1, maxLength: MAX_MODEL_LENGTH },
					).nullish(),
					{
						description: "The model, one Settings → AI allows for the provider (checked when a job or plan starts); omitted or null, the provider's default.",
						examples: ['claude-haiku-4-5'],
					},
				),
			},
			{ error: objectError('The request body must be a JSON object.') },
		)
		.transform(
			(body): NewWebsite => ({
				website_url: body.website_url,
				master_prompt: body.master_prompt,
				website_software: body.website_software?.trim() ?? 'wordpress',
				provider: body.provider ?? null,
				model: body.model?.trim() ?? null,
			}),
		),
	{ description: 'Interface 4.3. Unknown fields are refused with 400.' },
);

const Website = named(
	'Website',
	z.strictObject({
		id: Identifier,
		website_url: z.string().min(1),
		website_software: z.string().min(1),
		backend_user_id: doc(z.uuid(), { description: 'The owner: the user who created the record.' }),
		post_counts_total: doc(count(), { description: 'Pages generated for the website; 0 on creation.' }),
	}),
	{ description: 'A PSEO record (interface 2.1), as answered on creation.' },
);

/** 4.3 POST /pseo. */
export const createWebsiteRoute = defineRoute({
	method: 'post',
	path: '/pseo',
	operationId: 'createWebsite',
	tag: 'Websites',
	summary: 'Register a website (4.3)',
	body: NewWebsiteBody,
	examples: {
		bakery: {
			summary: 'A WordPress bakery site',
			body: { website_url: 'https://bakery.example', master_prompt: 'Warm, expert tone. Short paragraphs. We bake sourdough and celebration cakes.' },
		},
	},
	responses: {
		201: {
			description: 'Created.',
			schema: success('WebsiteCreated', { message: message(), data: Website }, 'Interface 4.3: the website is registered and owned by the caller.'),
		},
	},
	errors: [400, 401, [403, 'The caller\'s role has no permission to create websites.']],
});
