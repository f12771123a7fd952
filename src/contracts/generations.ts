import { z } from 'zod';
import { PROVIDER_KINDS } from '../shared/provider-kinds.ts';
import { doc, named } from './contract-registry.ts';
import { message, success } from './envelope.ts';
import { codePointLength, count, Identifier, idParam, objectError, positiveInteger, rule, Timestamp } from './field-rules.ts';
import { defineRoute } from './route-contract.ts';
import { troubleFields } from './trouble.ts';

/** The longest instructions a regeneration takes, in characters. */
const MAX_INSTRUCTIONS = 2000;

const NOT_AN_OBJECT = 'The request body must be a JSON object.';

/** 4.4: one page, in test mode. Fields the trigger does not use are ignored. */
const OnDemandGenerationRequest = named(
	'OnDemandGenerationRequest',
	z.object(
		{
			pseo_id: Identifier,
			post_count: doc(
				positiveInteger().refine((value) => value === 1, { error: rule('must be 1 for on-demand generation (test mode).') }),
				{ const: 1, description: 'Must be 1.' },
			),
		},
		{ error: NOT_AN_OBJECT },
	),
	{ description: 'Interface 4.4: one page, in test mode.' },
);

/** 4.5: any number of pages. */
const BulkGenerationRequest = named(
	'BulkGenerationRequest',
	z.object(
		{
			pseo_id: Identifier,
			post_count: doc(positiveInteger(), { description: 'Pages to generate; at most the plan\'s routes that have no post yet.', examples: [25] }),
		},
		{ error: NOT_AN_OBJECT },
	),
	{ description: 'Interface 4.5: any number of pages, through the provider\'s Batch API.' },
);

/** POST /trigger/refresh-generation: the website's stale posts, all of them or the first `post_count`. */
const RefreshGenerationRequest = named(
	'RefreshGenerationRequest',
	z.object(
		{
			pseo_id: Identifier,
			post_count: doc(positiveInteger().optional(), {
				description: 'Stale posts to rewrite, highest priority first; all of them when omitted.',
				examples: [10],
			}),
			republish: doc(z.boolean({ error: rule('must be true or false.') }).optional(), {
				description: 'Whether refreshed posts that were published are published again, in place, to the targets they are on. Default true.',
				examples: [false],
			}),
		},
		{ error: NOT_AN_OBJECT },
	),
	{ description: 'Rewrites the website\'s stale posts (their data changed since they were written) from their current facts.' },
);

const GenerationAccepted = success(
	'GenerationAccepted',
	{
		message: message(),
		generation_id: doc(Identifier, { description: 'Poll GET /generations/{id} with it.' }),
		status: z.literal('pending'),
	},
	'Interfaces 4.4 and 4.5: the job is queued and its tokens are charged.',
);

export const GenerationStatus = named('GenerationStatus', z.enum(['pending', 'running', 'completed', 'failed']), {
	description:
		'`pending`: queued; `running`: pages are being generated; `completed`: every page was created; `failed`: some page was not (see `failed_routes`).',
});

const JobKind = named('GenerationKind', z.enum(['on_demand', 'bulk', 'retry', 'regenerate', 'refresh']), {
	description:
		'What started the job: `on_demand` and `bulk`, their triggers; `retry`, a retry of a finished job\'s failed pages; `regenerate`, a new version of one post; `refresh`, a rewrite of the website\'s stale posts.',
});

const FailedRoute = named('FailedRoute', z.strictObject({ route: z.string(), error: z.string() }), {
	description: 'A route that produced no post, and why (operating contract section 4).',
});

const generationFields = {
	id: doc(Identifier, { description: 'The `generation_id` returned when the job was started.' }),
	pseo_id: doc(Identifier, { description: 'The website the job belongs to.' }),
	status: GenerationStatus,
	kind: JobKind,
	requested_count: doc(z.int().min(1), { description: 'Pages requested.' }),
	created_count: doc(count(), { description: 'Pages created so far.' }),
	failed_count: doc(count(), { description: 'Pages that failed (each refunded).' }),
	failed_routes: doc(z.array(FailedRoute), { description: 'Every route that produced no post; empty when none.' }),
	date_created: Timestamp,
};
const dateCompleted = doc(Timestamp.nullable(), { description: 'When the job finished; null while it is pending or running.' });

/** The provider and model a job runs with. */
const providerFields = {
	provider: doc(z.enum(PROVIDER_KINDS).nullable(), {
		description: 'The AI provider the job runs with, fixed when it was accepted; null for a job accepted before jobs recorded it.',
		examples: ['openai'],
	}),
	model: doc(z.string().min(1).nullable(), { description: 'The model the job runs with, fixed when it was accepted.', examples: ['gpt-5.4-mini'] }),
};

const GenerationSummary = named('GenerationSummary', z.strictObject({ ...generationFields, date_completed: dateCompleted, ...troubleFields, ...providerFields }), {
	description: 'A generation job as listed (interface 2.2, without `date_updated`).',
});

const Usage = named('Usage', z.strictObject({ prompt_tokens: count(), completion_tokens: count(), requests: count() }), {
	description:
		'Tokens the provider reported for the job\'s pages, summed over every answer it gave (retries and invalid answers included, as each was billed, and the lines a batch answered before a cancel stopped it), and the number of answers.',
});

const Generation = named(
	'Generation',
	z.strictObject({
		...generationFields,
		date_updated: Timestamp,
		date_completed: dateCompleted,
		...troubleFields,
		...providerFields,
		usage: Usage,
	}),
	{ description: 'A generation job (interface 2.2), with what it cost at the provider so far.' },
);

const generationId = z.object({ id: idParam('The `generation_id`.') });

/** The body of POST /posts/:id/regenerate: nothing, or `{ instructions }`; the output is the trimmed instructions or null. */
const RegenerateRequest = named(
	'RegenerateRequest',
	z
		.strictObject(
			{
				instructions: doc(
					doc(
						z.string({ error: rule('must be a string.') }).refine((value) => codePointLength(value.trim()) <= MAX_INSTRUCTIONS, {
							error: rule((input) => `must be at most ${MAX_INSTRUCTIONS} characters (received ${codePointLength(String(input).trim())}).`),
						}),
						{ maxLength: MAX_INSTRUCTIONS },
					).nullish(),
					{ description: 'What to change in the new version, added to the page prompt.', examples: ['Add a section on gluten-free options.'] },
				),
			},
			{ error: objectError(NOT_AN_OBJECT, (keys) => `Unknown field(s): ${keys}. Only "instructions" is accepted.`) },
		)
		.nullish()
		.transform((body) => ({ instructions: body?.instructions?.trim() || null })),
	{ description: 'Optional. Unknown fields are refused with 400.' },
);

const accepted = { 202: { description: 'Accepted; poll the generation.', schema: GenerationAccepted } };

/** 4.4 POST /trigger/on-demand-generation. */
export const onDemandGenerationRoute = defineRoute({
	method: 'post',
	idempotent: true,
	path: '/trigger/on-demand-generation',
	operationId: 'startOnDemandGeneration',
	tag: 'Generations',
	summary: 'Generate one page in test mode (4.4)',
	description: 'Takes the highest-priority route of the website\'s current plan that has no post yet, charges `token_per_page` and runs in the background.',
	body: OnDemandGenerationRequest,
	examples: { onePage: { summary: 'One page of website 1', body: { pseo_id: 1, post_count: 1 } } },
	responses: accepted,
	errors: [
		[400, 'Invalid body, `post_count` other than 1, no content plan, or no route left without a post.'],
		401,
		402,
		403,
		[404, 'The website does not exist.'],
		[409, 'A job of this website is pending or running.'],
	],
});

/** 4.5 POST /trigger/bulk-generation. */
export const bulkGenerationRoute = defineRoute({
	method: 'post',
	idempotent: true,
	path: '/trigger/bulk-generation',
	operationId: 'startBulkGeneration',
	tag: 'Generations',
	summary: 'Generate many pages (4.5)',
	description:
		'Takes the `post_count` highest-priority routes of the website\'s current plan that have no post yet, charges `token_per_batch_page` each and runs in the background.',
	body: BulkGenerationRequest,
	examples: { threePages: { summary: 'Three pages of website 1', body: { pseo_id: 1, post_count: 3 } } },
	responses: accepted,
	errors: [
		[400, 'Invalid body, no content plan, or fewer routes without a post than `post_count`.'],
		401,
		402,
		403,
		[404, 'The website does not exist.'],
		[409, 'A job of this website is pending or running.'],
	],
});

/** POST /trigger/refresh-generation. */
export const refreshGenerationRoute = defineRoute({
	method: 'post',
	idempotent: true,
	path: '/trigger/refresh-generation',
	operationId: 'startRefreshGeneration',
	tag: 'Generations',
	summary: 'Rewrite the stale posts of a website',
	description:
		'Takes the website\'s stale posts (a sync import changed their plan page\'s data since they were written; retired ones left out), highest priority first, all of them or the first `post_count`, charges `token_per_batch_page` each and runs as a bulk job (kind `refresh`). Each page is written from the facts its plan page holds when the job is accepted; the new version replaces the post, the previous one stays as a revision, and `stale` is cleared. Unless `republish` is false, the refreshed posts that were published are published again, in place, when the job ends.',
	body: RefreshGenerationRequest,
	examples: { allStale: { summary: 'Every stale post of website 1', body: { pseo_id: 1 } } },
	responses: accepted,
	errors: [
		[400, 'Invalid body, or no stale post to refresh.'],
		401,
		402,
		403,
		[404, 'The website does not exist.'],
		[409, 'A job of this website is pending or running.'],
	],
});

/** 4.7 GET /generations?pseo_id=X. */
export const listGenerationsRoute = defineRoute({
	method: 'get',
	path: '/generations',
	operationId: 'listGenerations',
	tag: 'Generations',
	summary: 'List a website\'s jobs (4.7)',
	query: z.object({ pseo_id: idParam('The website.') }),
	examples: { website: { summary: 'The jobs of website 1', query: { pseo_id: '1' } } },
	responses: {
		200: {
			description: 'Up to 50 jobs, newest first.',
			schema: success(
				'GenerationList',
				{ data: doc(z.array(GenerationSummary).max(50), { description: 'Newest first.' }) },
				'Interface 4.7: the caller\'s 50 newest jobs of the website.',
			),
		},
	},
	errors: [400, 401, 403, [404, 'The website does not exist.']],
});

/** 4.6 GET /generations/:id. */
export const getGenerationRoute = defineRoute({
	method: 'get',
	path: '/generations/{id}',
	operationId: 'getGeneration',
	tag: 'Generations',
	summary: 'Read one job (4.6)',
	params: generationId,
	examples: { first: { summary: 'Generation 1', params: { id: '1' } } },
	responses: { 200: { description: 'The job.', schema: success('GenerationResponse', { data: Generation }, 'Interface 4.6.') } },
	errors: [400, 401, 403, [404, 'The generation does not exist.']],
});

/** POST /generations/:id/cancel. */
export const cancelGenerationRoute = defineRoute({
	method: 'post',
	idempotent: true,
	path: '/generations/{id}/cancel',
	operationId: 'cancelGeneration',
	tag: 'Generations',
	summary: 'Stop a pending or running job',
	description:
		'Chat jobs stop taking pages, batch jobs cancel their provider batch. Every page not yet created ends in `failed_routes` with the error `cancelled` and is refunded; the job ends `failed`. The cancel is stored: it holds across instances and restarts.',
	params: generationId,
	examples: { bulk: { summary: 'Stop generation 2', params: { id: '2' } } },
	responses: {
		200: {
			description: 'The job after its cancel.',
			schema: success(
				'CancelledGeneration',
				{ message: message(), data: Generation },
				'The job after its cancel: `failed`, its unfinished pages in `failed_routes` as `cancelled`.',
			),
		},
	},
	errors: [400, 401, 403, [404, 'The generation does not exist.'], [409, 'The job has already finished.']],
});

/** POST /generations/:id/retry. */
export const retryGenerationRoute = defineRoute({
	method: 'post',
	idempotent: true,
	path: '/generations/{id}/retry',
	operationId: 'retryGeneration',
	tag: 'Generations',
	summary: 'Run a finished job\'s failed pages again',
	description: 'Starts a new job in the original job\'s mode, at that mode\'s rate, for the routes of its `failed_routes` that have no post yet.',
	params: z.object({ id: idParam('The `generation_id` of the finished job.') }),
	examples: { cancelled: { summary: 'Retry the pages generation 2 did not create', params: { id: '2' } } },
	responses: { 202: { description: 'Accepted; poll the new generation.', schema: GenerationAccepted } },
	errors: [
		[400, 'The job is still pending or running, or none of its failed routes is left to retry.'],
		401,
		402,
		403,
		[404, 'The generation does not exist.'],
		[409, 'Another job of this website is pending or running.'],
	],
});

/** POST /posts/:id/regenerate. */
export const regeneratePostRoute = defineRoute({
	method: 'post',
	idempotent: true,
	path: '/posts/{id}/regenerate',
	operationId: 'regeneratePost',
	tag: 'Generations',
	summary: 'Write a new version of one page',
	description:
		'Starts an on-demand job of one page for the post\'s route, charged `token_per_page`, with the optional instructions added to the prompt. The new content replaces the post; the previous version stays as a Directus revision of the post, to compare and revert in the app.',
	params: z.object({ id: idParam('The id of the post (a generated page).') }),
	body: RegenerateRequest,
	bodyOptional: true,
	examples: {
		withInstructions: { summary: 'A new version of post 1, with instructions', params: { id: '1' }, body: { instructions: 'Add a section on gluten-free options.' } },
	},
	responses: accepted,
	errors: [
		[400, 'Invalid body: unknown fields, or instructions that are not a string of at most 2,000 characters.'],
		401,
		402,
		403,
		[404, 'The post does not exist.'],
		[409, 'A job of the post\'s website is pending or running.'],
	],
});
