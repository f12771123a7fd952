import { z } from 'zod';
import { POST_STATUSES, type TargetInput } from '../publishing/publishing-target.ts';
import type { PublishRequest } from '../publishing/start-publication.ts';
import type { TargetKind } from '../publishing/target-store.ts';
import { MAX_ID } from '../shared/database.ts';
import { doc, named } from './contract-registry.ts';
import { message, success } from './envelope.ts';
import { count, Identifier, idParam, objectError, rule, Timestamp } from './field-rules.ts';
import { GenerationStatus } from './generations.ts';
import { defineRoute } from './route-contract.ts';
import { troubleFields } from './trouble.ts';

/** Posts one publication may list by id. */
const MAX_POST_IDS = 10_000;
/** The most posts a schedule puts on one day. */
const MAX_PER_DAY = 1000;
const MAX_URL_LENGTH = 2048;
const ISO_WITH_ZONE = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2})$/;

const FIELDS: Record<TargetKind, readonly string[]> = {
	wordpress: ['target', 'url', 'username', 'application_password', 'default_status'],
	webhook: ['target', 'url', 'secret'],
};

const postStatus = () => z.enum(POST_STATUSES, { error: rule(`must be one of ${POST_STATUSES.join(', ')}.`) });

/** The address of a site or receiver: absolute http(s), no credentials; normalised. */
const siteUrl = (description: string) =>
	doc(
		z
			.string({ error: rule('is required: the http(s) address of the site or receiver.') })
			.refine((value) => value.trim() !== '', { error: rule('is required: the http(s) address of the site or receiver.'), abort: true })
			.refine((value) => value.length <= MAX_URL_LENGTH, { error: rule('must be at most 2,048 characters.'), abort: true })
			.refine((value) => URL.parse(value.trim()) !== null, { error: rule('is not a valid URL.'), abort: true })
			.refine((value) => ['http:', 'https:'].includes(URL.parse(value.trim())!.protocol), { error: rule('must use http or https.'), abort: true })
			.refine((value) => !URL.parse(value.trim())!.username && !URL.parse(value.trim())!.password, {
				error: rule('must not carry credentials; use the credential fields.'),
			})
			.transform((value) => URL.parse(value.trim())!.href),
		{ format: 'uri', maxLength: MAX_URL_LENGTH, description },
	);

/** A write-only secret of `minLength` to 512 characters, trimmed; left out or null, the stored one is kept. */
const secret = (minLength: number, description: string) =>
	doc(
		doc(
			z
				.string({ error: rule(`must be a string of ${minLength} to 512 characters.`) })
				.refine((value) => value.trim().length >= minLength && value.length <= 512, { error: rule(`must be a string of ${minLength} to 512 characters.`) })
				.transform((value) => value.trim()),
			{ minLength, maxLength: 512 },
		)
			.nullish()
			.transform((value) => value ?? null),
		{ description },
	);

const postIdError = rule(`must hold positive integers of at most ${MAX_ID} only.`);

const unknownFor = (kind: TargetKind) => (keys: string) => `Unknown field(s) for a ${kind} target: ${keys}. Accepted: ${FIELDS[kind].join(', ')}.`;

/** The body of PUT /pseo/:id/publishing: a WordPress site or a webhook receiver. */
const PublishingTargetRequest = named(
	'PublishingTargetRequest',
	z
		.discriminatedUnion(
			'target',
			[
				z.strictObject(
					{
						target: z.literal('wordpress'),
						url: siteUrl('The WordPress site.'),
						username: doc(
							z
								.string({ error: rule('must be the WordPress user name (1 to 60 characters).') })
								.refine((value) => value.trim() !== '' && value.length <= 60, { error: rule('must be the WordPress user name (1 to 60 characters).') })
								.transform((value) => value.trim()),
							{ minLength: 1, maxLength: 60, examples: ['editor'] },
						),
						application_password: secret(8, 'Write-only; stored encrypted.'),
						default_status: doc(
							postStatus()
								.nullish()
								.transform((value) => value ?? 'draft'),
							{ default: 'draft' },
						),
					},
					{ error: objectError('The request body must be a JSON object.', unknownFor('wordpress')) },
				),
				z.strictObject(
					{
						target: z.literal('webhook'),
						url: siteUrl('Where deliveries are POSTed.'),
						secret: secret(16, 'Signs every delivery (X-PSEO-Signature). Write-only; stored encrypted.'),
					},
					{ error: objectError('The request body must be a JSON object.', unknownFor('webhook')) },
				),
			],
			{
				error: (issue) => (issue.code === 'invalid_union' ? '"target" must be "wordpress" or "webhook".' : 'The request body must be a JSON object.'),
			},
		)
		.transform(
			(body): TargetInput =>
				body.target === 'webhook'
					? { target: 'webhook', url: body.url, secret: body.secret }
					: { target: 'wordpress', url: body.url, username: body.username, applicationPassword: body.application_password, defaultStatus: body.default_status },
		),
	{
		description:
			'A WordPress site (an Application Password of a user who may create posts; WordPress 5.6 and later) or a webhook receiver. The secret is write-only: left out, the stored one is kept. Unknown fields are refused with 400.',
	},
);

/** The body of POST /publish: `{ pseo_id, post_ids?, status?, schedule? }`. */
const PublishRequestBody = named(
	'PublishRequest',
	z
		.strictObject(
			{
				pseo_id: Identifier,
				post_ids: doc(
					z
						.array(z.int({ error: postIdError }).min(1, { error: postIdError }).max(MAX_ID, { error: postIdError }), {
							error: rule(`must be an array of 1 to ${MAX_POST_IDS} post ids.`),
						})
						.min(1, { error: rule(`must be an array of 1 to ${MAX_POST_IDS} post ids.`) })
						.max(MAX_POST_IDS, { error: rule(`must be an array of 1 to ${MAX_POST_IDS} post ids.`) })
						.nullish(),
					{
						description:
							'Only these posts (a post the quality gate failed is taken when listed). Default: every post of the website the gate did not fail; those the site already has in this version are skipped.',
					},
				),
				status: doc(postStatus().nullish(), { description: 'WordPress status; default: the target\'s `default_status`.' }),
				schedule: doc(
					z
						.strictObject(
							{
								start: doc(
									z
										.string({ error: rule('must be an ISO 8601 date-time with a time zone, such as 2027-01-04T09:00:00Z.') })
										.regex(ISO_WITH_ZONE, { error: rule('must be an ISO 8601 date-time with a time zone, such as 2027-01-04T09:00:00Z.'), abort: true })
										.refine((value) => Number.isFinite(Date.parse(value)), {
											error: rule('must be an ISO 8601 date-time with a time zone, such as 2027-01-04T09:00:00Z.'),
											abort: true,
										})
										.refine((value) => Date.parse(value) > Date.now(), { error: rule('must be in the future.') }),
									{ format: 'date-time', description: 'In the future, with a time zone.', examples: ['2027-01-04T09:00:00Z'] },
								),
								per_day: z
									.int({ error: rule(`must be an integer from 1 to ${MAX_PER_DAY}.`) })
									.min(1, { error: rule(`must be an integer from 1 to ${MAX_PER_DAY}.`) })
									.max(MAX_PER_DAY, { error: rule(`must be an integer from 1 to ${MAX_PER_DAY}.`) }),
							},
							{ error: objectError('"schedule" must be an object { start, per_day }.', (keys) => `Unknown field(s) in "schedule": ${keys}.`) },
						)
						.nullish(),
					{ description: 'Spread the posts as WordPress `future` posts, `per_day` a day from `start` (excludes `status`).' },
				),
			},
			{ error: objectError('The request body must be a JSON object.', (keys) => `Unknown field(s): ${keys}. Accepted: pseo_id, post_ids, status, schedule.`) },
		)
		.refine((body) => !(body.status && body.schedule), { error: '"status" and "schedule" exclude each other: a scheduled post is a future post.' })
		.transform(
			(body): PublishRequest => ({
				pseoId: body.pseo_id,
				postIds: body.post_ids ? [...new Set(body.post_ids)] : null,
				status: body.status ?? null,
				schedule: body.schedule ? { start: new Date(Date.parse(body.schedule.start)).toISOString(), per_day: body.schedule.per_day } : null,
			}),
		),
	{ description: 'Unknown fields are refused with 400.' },
);

const PublishingTarget = named(
	'PublishingTarget',
	z.strictObject({
		pseo_id: Identifier,
		target: z.enum(['wordpress', 'webhook']),
		url: z.string(),
		username: doc(z.string(), { description: 'WordPress only.' }).optional(),
		default_status: doc(z.enum(POST_STATUSES), { description: 'WordPress only.' }).optional(),
		has_credentials: doc(z.boolean(), { description: 'Whether a secret is stored (it is never returned).' }),
		date_created: Timestamp.nullable(),
		date_updated: Timestamp.nullable(),
	}),
	{ description: 'A website\'s publishing target, without its secret.' },
);

const PublishingTargetResponse = named(
	'PublishingTargetResponse',
	z.strictObject({ success: z.literal(true), message: z.string().optional(), data: PublishingTarget, timestamp: Timestamp }),
	{ description: 'The target, without its secret (with a message after a save).' },
);

const FailedPost = named('FailedPost', z.strictObject({ post_id: Identifier, route: z.string(), error: z.string() }), {
	description: 'A post the publication could not publish, and why.',
});

const Publication = named(
	'Publication',
	z.strictObject({
		id: Identifier,
		pseo_id: Identifier,
		status: GenerationStatus,
		target: z.enum(['wordpress', 'webhook']),
		requested_count: doc(count(), { description: 'Posts taken.' }),
		created_count: doc(count(), { description: 'Posts created on the site (or first delivered to the webhook).' }),
		updated_count: doc(count(), { description: 'Posts updated in place.' }),
		unchanged_count: doc(count(), { description: 'Posts the site already had in this version: nothing was sent.' }),
		failed_count: count(),
		failed_posts: z.array(FailedPost),
		notices: doc(z.array(z.string()), {
			description: 'What the publication tells its owner, each once: for WordPress, that the structured data was left out, when the user may not publish raw HTML and the site exposes no SEO plugin field for it.',
		}),
		date_created: Timestamp,
		date_completed: doc(Timestamp.nullable(), { description: 'Null while pending or running.' }),
		...troubleFields,
	}),
	{ description: 'A publication: posts sent to the website\'s target, as a durable job.' },
);

const websiteId = z.object({ id: idParam('The website (`pseo_id`).') });

/** PUT /pseo/:id/publishing. */
export const savePublishingTargetRoute = defineRoute({
	method: 'put',
	path: '/pseo/{id}/publishing',
	operationId: 'savePublishingTarget',
	tag: 'Publishing',
	summary: 'Set where the website publishes',
	description:
		'Checks the target before saving it: the WordPress user must be able to create posts (and publish them, for `default_status: publish`); every address must pass the SSRF guard. The secret is stored encrypted with a key derived from the instance\'s SECRET and never returned.',
	params: websiteId,
	body: PublishingTargetRequest,
	examples: {
		webhook: {
			summary: 'A signed webhook receiver for website 1',
			params: { id: '1' },
			body: { target: 'webhook', url: 'https://hooks.bakery.example/pseo', secret: 'a-long-shared-secret-of-the-receiver' },
		},
	},
	responses: { 200: { description: 'Saved.', schema: PublishingTargetResponse } },
	errors: [[400, 'Invalid body, an address the guard refuses, or WordPress refused the credentials (its reason is given).'], 401, 403, [404, 'The website does not exist.']],
});

/** GET /pseo/:id/publishing. */
export const getPublishingTargetRoute = defineRoute({
	method: 'get',
	path: '/pseo/{id}/publishing',
	operationId: 'getPublishingTarget',
	tag: 'Publishing',
	summary: 'Read the website\'s publishing target',
	params: websiteId,
	examples: { website: { summary: 'The target of website 1', params: { id: '1' } } },
	responses: { 200: { description: 'The target, without its secret.', schema: PublishingTargetResponse } },
	errors: [400, 401, 403, [404, 'The website does not exist or has no target.']],
});

/** DELETE /pseo/:id/publishing. */
export const deletePublishingTargetRoute = defineRoute({
	method: 'delete',
	path: '/pseo/{id}/publishing',
	operationId: 'deletePublishingTarget',
	tag: 'Publishing',
	summary: 'Remove the website\'s publishing target',
	params: websiteId,
	examples: { website: { summary: 'Remove the target of website 1', params: { id: '1' } } },
	responses: { 200: { description: 'Removed.', schema: success('Removed', { message: message() }, 'Removed.') } },
	errors: [400, 401, 403, [404, 'The website does not exist or has no target.']],
});

/** POST /publish. */
export const publishRoute = defineRoute({
	method: 'post',
	idempotent: true,
	path: '/publish',
	operationId: 'publish',
	tag: 'Publishing',
	summary: 'Send posts to the website',
	description:
		'A durable job: leased, resumed after a crash, run once across instances. Each post is created on the site, updated in place, or skipped when the site already has this version; a create whose answer was lost is found again by its marker, never repeated. One publication per website at a time; it does not block generation.',
	body: PublishRequestBody,
	examples: { everything: { summary: 'Every post of website 1 the quality gate did not fail', body: { pseo_id: 1 } } },
	responses: {
		202: {
			description: 'Accepted; poll the publication.',
			schema: success(
				'PublicationAccepted',
				{ message: message(), publication_id: doc(Identifier, { description: 'Poll GET /publications/{id} with it.' }), status: z.literal('pending') },
				'The publication is queued.',
			),
		},
	},
	errors: [
		[400, 'Invalid body, or post ids that are not the website\'s.'],
		401,
		403,
		[404, 'The website does not exist.'],
		[409, 'The website has no publishing target, or a publication of it is pending or running.'],
	],
});

/** GET /publications/:id. */
export const getPublicationRoute = defineRoute({
	method: 'get',
	path: '/publications/{id}',
	operationId: 'getPublication',
	tag: 'Publishing',
	summary: 'Read one publication',
	params: z.object({ id: idParam('The `publication_id`.') }),
	examples: { first: { summary: 'Publication 1', params: { id: '1' } } },
	responses: { 200: { description: 'The publication.', schema: success('PublicationResponse', { data: Publication }, 'The publication.') } },
	errors: [400, 401, 403, [404, 'The publication does not exist.']],
});
