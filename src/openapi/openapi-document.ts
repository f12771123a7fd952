import { PAGE_TYPES, SEARCH_INTENTS } from '../plan/plan-schema.ts';
import { MAX_ID } from '../shared/database.ts';

/*
 * The OpenAPI 3.1 description of every route under /pseo-endpoints, served by GET /pseo-endpoints/openapi.json.
 *
 * Adding a route: write its operation in `operations()` under its path (relative to /pseo-endpoints, as in the
 * health check's list), reuse or add a schema in `schemas`, and list the statuses it can answer with
 * `errors(...)`. The unit test beside this file checks the document against the OpenAPI 3.1 schema and against
 * the health check's list; the integration suites check every response they receive against it.
 */

type Json = Record<string, unknown>;

const ref = (name: string): Json => ({ $ref: `#/components/schemas/${name}` });
const nullable = (schema: Json): Json => ({ anyOf: [schema, { type: 'null' }] });

/** An object schema whose listed properties are all required and which allows no others. */
function closed(properties: Record<string, Json>, optional: string[] = []): Json {
	return {
		type: 'object',
		required: Object.keys(properties).filter((key) => !optional.includes(key)),
		properties,
		additionalProperties: false,
	};
}

/** A success body of the interface's envelope (section 2.4): `success: true`, the payload, `timestamp`. */
function success(properties: Record<string, Json>, description: string): Json {
	return { description, ...closed({ success: { const: true }, ...properties, timestamp: ref('Timestamp') }) };
}

const generationFields: Record<string, Json> = {
	id: { ...ref('Identifier'), description: 'The `generation_id` returned when the job was started.' },
	pseo_id: { ...ref('Identifier'), description: 'The website the job belongs to.' },
	status: ref('GenerationStatus'),
	requested_count: { type: 'integer', minimum: 1, description: 'Pages requested.' },
	created_count: { type: 'integer', minimum: 0, description: 'Pages created so far.' },
	failed_count: { type: 'integer', minimum: 0, description: 'Pages that failed (each refunded).' },
	failed_routes: { type: 'array', items: ref('FailedRoute'), description: 'Every route that produced no post; empty when none.' },
	date_created: ref('Timestamp'),
};
const dateCompleted: Json = { ...nullable(ref('Timestamp')), description: 'When the job finished; null while it is pending or running.' };

const schemas: Record<string, Json> = {
	Timestamp: {
		type: 'string',
		format: 'date-time',
		pattern: '^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}\\.\\d{3}Z$',
		description: 'ISO 8601 UTC timestamp with milliseconds.',
		examples: ['2026-01-31T09:30:00.000Z'],
	},
	Identifier: { type: 'integer', minimum: 1, maximum: MAX_ID, description: 'A positive integer identifier (32-bit, as PostgreSQL and MySQL store it).', examples: [1] },
	ErrorEnvelope: {
		description:
			'Every error under /pseo-endpoints, Directus\'s own included (an invalid token, malformed JSON, an unknown path), has this shape (interface section 7).',
		...closed({
			success: { const: false },
			error: { type: 'string', minLength: 1, description: 'A human-readable message.' },
			code: {
				type: 'string',
				minLength: 1,
				description:
					'A machine-readable code: `PSEO_INVALID_PAYLOAD`, `PSEO_UNAUTHORIZED`, `PSEO_INSUFFICIENT_TOKENS`, `PSEO_FORBIDDEN`, `PSEO_NOT_FOUND`, `PSEO_CONFLICT`, `PSEO_PROVIDER_UNAVAILABLE`, `INTERNAL_SERVER_ERROR`, or the code of an error Directus raised itself (`INVALID_CREDENTIALS`, `INVALID_TOKEN`, `TOKEN_EXPIRED`, `INVALID_PAYLOAD`, `FORBIDDEN`, `SERVICE_UNAVAILABLE`...).',
				examples: ['PSEO_NOT_FOUND'],
			},
			timestamp: ref('Timestamp'),
		}),
	},
	Health: success(
		{
			status: { const: 'ok' },
			extension: { const: 'pseo-automation' },
			version: { type: 'string', pattern: '^\\d+\\.\\d+\\.\\d+', description: 'The extension\'s semantic version.', examples: ['0.1.0'] },
			endpoints: {
				type: 'array',
				items: { type: 'string' },
				description: 'The available endpoints, as `METHOD /path` relative to /pseo-endpoints.',
				examples: [['GET /', 'POST /pseo', 'GET /generations/:id', 'GET /generations?pseo_id=X']],
			},
		},
		'Interface 4.1: the extension is loaded and answering.',
	),
	NewWebsite: {
		description: 'Interface 4.3. Unknown fields are refused with 400.',
		...closed(
			{
				website_url: {
					type: 'string',
					maxLength: 2048,
					description: 'Absolute http(s) URL of the website, without credentials.',
					examples: ['https://bakery.example'],
				},
				master_prompt: {
					type: 'string',
					minLength: 1,
					description: 'Instructions guiding the AI for every page of this website; not blank.',
					examples: ['Warm, expert tone. Short paragraphs.'],
				},
				website_software: {
					type: 'string',
					minLength: 1,
					maxLength: 100,
					default: 'wordpress',
					description: 'CMS or platform identifier.',
					examples: ['wordpress'],
				},
			},
			['website_software'],
		),
	},
	Website: {
		description: 'A PSEO record (interface 2.1), as answered on creation.',
		...closed({
			id: ref('Identifier'),
			website_url: { type: 'string', minLength: 1 },
			website_software: { type: 'string', minLength: 1 },
			backend_user_id: { type: 'string', format: 'uuid', description: 'The owner: the user who created the record.' },
			post_counts_total: { type: 'integer', minimum: 0, description: 'Pages generated for the website; 0 on creation.' },
		}),
	},
	WebsiteCreated: success(
		{ message: { type: 'string' }, data: ref('Website') },
		'Interface 4.3: the website is registered and owned by the caller.',
	),
	OnDemandGenerationRequest: {
		description: 'Interface 4.4: one page, in test mode.',
		type: 'object',
		required: ['pseo_id', 'post_count'],
		properties: {
			pseo_id: ref('Identifier'),
			post_count: { const: 1, description: 'Must be 1.' },
		},
	},
	BulkGenerationRequest: {
		description: 'Interface 4.5: any number of pages, through the provider\'s Batch API.',
		type: 'object',
		required: ['pseo_id', 'post_count'],
		properties: {
			pseo_id: ref('Identifier'),
			post_count: {
				type: 'integer',
				minimum: 1,
				description: 'Pages to generate; at most the plan\'s routes that have no post yet.',
				examples: [25],
			},
		},
	},
	GenerationAccepted: success(
		{
			message: { type: 'string' },
			generation_id: { ...ref('Identifier'), description: 'Poll GET /generations/{id} with it.' },
			status: { const: 'pending' },
		},
		'Interfaces 4.4 and 4.5: the job is queued and its tokens are charged.',
	),
	GenerationStatus: {
		type: 'string',
		enum: ['pending', 'running', 'completed', 'failed'],
		description:
			'`pending`: queued; `running`: pages are being generated; `completed`: every page was created; `failed`: some page was not (see `failed_routes`).',
	},
	FailedRoute: {
		description: 'A route that produced no post, and why (operating contract section 4).',
		...closed({ route: { type: 'string' }, error: { type: 'string' } }),
	},
	GenerationSummary: {
		description: 'A generation job as listed (interface 2.2, without `date_updated`).',
		...closed({ ...generationFields, date_completed: dateCompleted }),
	},
	Generation: {
		description: 'A generation job (interface 2.2), with what it cost at the provider so far.',
		...closed({ ...generationFields, date_updated: ref('Timestamp'), date_completed: dateCompleted, usage: ref('Usage') }),
	},
	Usage: {
		description:
			'Tokens the provider reported for the job\'s pages, summed over every answer it gave (retries and invalid answers included, as each was billed), and the number of answers.',
		...closed({
			prompt_tokens: { type: 'integer', minimum: 0 },
			completion_tokens: { type: 'integer', minimum: 0 },
			requests: { type: 'integer', minimum: 0 },
		}),
	},
	GenerationResponse: success({ data: ref('Generation') }, 'Interface 4.6.'),
	CancelledGeneration: success({ message: { type: 'string' }, data: ref('Generation') }, 'The job after its cancel: `failed`, its unfinished pages in `failed_routes` as `cancelled`.'),
	GenerationList: success(
		{ data: { type: 'array', maxItems: 50, items: ref('GenerationSummary'), description: 'Newest first.' } },
		'Interface 4.7: the caller\'s 50 newest jobs of the website.',
	),
	RegenerateRequest: {
		description: 'Optional. Unknown fields are refused with 400.',
		...closed({ instructions: { type: 'string', maxLength: 2000, description: 'What to change in the new version, added to the page prompt.' } }, ['instructions']),
	},
	PlanRequest: {
		description: 'Interface 4.8. Unknown fields are refused with 400.',
		...closed({
			pseo_id: ref('Identifier'),
			language_code: {
				type: 'string',
				maxLength: 35,
				description:
					'A plain locale: language, optional script, optional region (`en`, `en-US`, `tr-TR`, `zh-Hant-TW`, `es-419`). Case and `_` are forgiven.',
				examples: ['en-US'],
			},
			description: {
				type: 'string',
				minLength: 150,
				maxLength: 1000,
				description:
					'The business: sector, services, audience and goals. 150 to 1000 characters (Unicode code points) after trimming.',
			},
		}),
	},
	PlanPage: {
		description: 'One page of a content plan (interface 2.3), with its SEO metadata.',
		...closed({
			route: { type: 'string', pattern: '^/', description: 'Lower-case slug path, unique in the plan.', examples: ['/sourdough-bread'] },
			title: { type: 'string' },
			priority: { type: 'number', minimum: 0, maximum: 100, description: 'Business value; pages are listed highest first.' },
			primary_keyword: { type: 'string' },
			search_intent: { type: 'string', enum: [...SEARCH_INTENTS] },
			page_type: { type: 'string', enum: [...PAGE_TYPES] },
			parent_route: { ...nullable({ type: 'string', pattern: '^/' }), description: 'The hub page above this one, or null.' },
			cluster: { type: 'string', description: 'Slug of the topical cluster.' },
		}),
	},
	ContentPlan: {
		description: 'The `main_json` of a website (interface 2.3).',
		...closed({ pages: { type: 'array', items: ref('PlanPage') } }),
	},
	PlanResponse: success(
		{
			message: { type: 'string' },
			data: closed({ main_json: ref('ContentPlan'), total_pages: { type: 'integer', minimum: 1 } }),
		},
		'Interface 4.8: the plan is generated and stored as the website\'s current plan.',
	),
	PlanImportRequest: {
		description: 'A plan from data: a template crossed with `rows` or with a file of the Directus file library (`file_id`), exactly one of the two. Unknown fields are refused with 400.',
		type: 'object',
		required: ['pseo_id', 'language_code', 'template'],
		properties: {
			pseo_id: ref('Identifier'),
			language_code: { type: 'string', maxLength: 35, description: 'The plan\'s locale, as for 4.8.', examples: ['en-US'] },
			template: closed(
				{
					route: { type: 'string', maxLength: 500, description: 'Starts with `/`; each `{column}` becomes a URL slug of that column\'s value (accents folded, letters of every script kept).', examples: ['/{service}/{city}'] },
					title: { type: 'string', maxLength: 500, examples: ['{service} in {city}'] },
					primary_keyword: { type: 'string', maxLength: 500, examples: ['{service} {city}'] },
					priority: { anyOf: [{ type: 'number' }, { type: 'string', pattern: '^\\{[^{}]+\\}$' }], description: 'A number, or `{column}`.' },
					cluster: { type: 'string', maxLength: 500, examples: ['{service}'] },
				},
				['primary_keyword', 'priority', 'cluster'],
			),
			rows: { type: 'array', minItems: 1, maxItems: 100000, items: { type: 'object' }, description: 'Flat objects of column values. Bounded by Directus\'s MAX_PAYLOAD_SIZE; use `file_id` for big imports.' },
			file_id: { type: 'string', format: 'uuid', description: 'A file the caller uploaded: CSV with a header row, a JSON array of objects, or JSON Lines; at most 100,000 rows.' },
			mode: { enum: ['append', 'replace'], default: 'append' },
		},
		additionalProperties: false,
	},
	PlanImportResponse: success(
		{
			message: { type: 'string' },
			data: closed({
				total_pages: { type: 'integer', minimum: 0, description: 'Pages in the website\'s plan after the import.' },
				added: { type: 'integer', minimum: 0 },
				skipped: closed({
					duplicate: { type: 'integer', minimum: 0, description: 'Repeated in the data, or already in the plan.' },
					on_site: { type: 'integer', minimum: 0, description: 'Already on the website\'s sitemap.' },
					invalid: { type: 'integer', minimum: 0, description: 'A placeholder without a value, or an invalid route or priority.' },
				}),
			}),
		},
		'The import is stored whole: the pages, the charge and the plan record in one transaction.',
	),
	SitemapResponse: success(
		{ urls: { type: 'array', items: { type: 'string' }, description: 'Every page URL found, once each, in document order.' } },
		'Interface 4.9. A missing sitemap or an unreachable website is not an error: `urls` is then empty.',
	),
	Balance: success(
		{
			data: closed({
				balance: { type: 'integer', minimum: 0, description: 'The caller\'s token balance.' },
				rates: closed({
					token_per_page: { type: 'integer', minimum: 0, description: 'Charged per on-demand page.' },
					token_per_batch_page: { type: 'integer', minimum: 0, description: 'Charged per bulk page.' },
					token_per_main_json: { type: 'integer', minimum: 0, description: 'Charged per content plan.' },
				}),
			}),
		},
		'The caller\'s balance and the current rates.',
	),
	PublishingTargetRequest: {
		description:
			'A WordPress site (an Application Password of a user who may create posts; WordPress 5.6 and later) or a webhook receiver. The secret is write-only: left out, the stored one is kept. Unknown fields are refused with 400.',
		oneOf: [
			closed(
				{
					target: { const: 'wordpress' },
					url: { type: 'string', format: 'uri', maxLength: 2048, description: 'The WordPress site.' },
					username: { type: 'string', minLength: 1, maxLength: 60 },
					application_password: { type: 'string', minLength: 8, maxLength: 512, description: 'Write-only; stored encrypted.' },
					default_status: { enum: ['draft', 'pending', 'private', 'publish'], default: 'draft' },
				},
				['application_password', 'default_status'],
			),
			closed(
				{
					target: { const: 'webhook' },
					url: { type: 'string', format: 'uri', maxLength: 2048, description: 'Where deliveries are POSTed.' },
					secret: { type: 'string', minLength: 16, maxLength: 512, description: 'Signs every delivery (X-PSEO-Signature). Write-only; stored encrypted.' },
				},
				['secret'],
			),
		],
	},
	PublishingTarget: {
		description: 'A website\'s publishing target, without its secret.',
		...closed(
			{
				pseo_id: ref('Identifier'),
				target: { enum: ['wordpress', 'webhook'] },
				url: { type: 'string' },
				username: { type: 'string', description: 'WordPress only.' },
				default_status: { enum: ['draft', 'pending', 'private', 'publish'], description: 'WordPress only.' },
				has_credentials: { type: 'boolean', description: 'Whether a secret is stored (it is never returned).' },
				date_created: nullable(ref('Timestamp')),
				date_updated: nullable(ref('Timestamp')),
			},
			['username', 'default_status'],
		),
	},
	PublishingTargetResponse: {
		description: 'The target, without its secret (with a message after a save).',
		...closed({ success: { const: true }, message: { type: 'string' }, data: ref('PublishingTarget'), timestamp: ref('Timestamp') }, ['message']),
	},
	PublishRequest: {
		description: 'Unknown fields are refused with 400.',
		...closed(
			{
				pseo_id: ref('Identifier'),
				post_ids: { type: 'array', minItems: 1, maxItems: 10000, items: ref('Identifier'), description: 'Only these posts (a post the quality gate failed is taken when listed). Default: every post of the website the gate did not fail; those the site already has in this version are skipped.' },
				status: { enum: ['draft', 'pending', 'private', 'publish'], description: 'WordPress status; default: the target\'s `default_status`.' },
				schedule: {
					description: 'Spread the posts as WordPress `future` posts, `per_day` a day from `start` (excludes `status`).',
					...closed({ start: { type: 'string', format: 'date-time', description: 'In the future, with a time zone.' }, per_day: { type: 'integer', minimum: 1, maximum: 1000 } }),
				},
			},
			['post_ids', 'status', 'schedule'],
		),
	},
	PublicationAccepted: success(
		{
			message: { type: 'string' },
			publication_id: { ...ref('Identifier'), description: 'Poll GET /publications/{id} with it.' },
			status: { const: 'pending' },
		},
		'The publication is queued.',
	),
	FailedPost: {
		description: 'A post the publication could not publish, and why.',
		...closed({ post_id: ref('Identifier'), route: { type: 'string' }, error: { type: 'string' } }),
	},
	Publication: {
		description: 'A publication: posts sent to the website\'s target, as a durable job.',
		...closed({
			id: ref('Identifier'),
			pseo_id: ref('Identifier'),
			status: ref('GenerationStatus'),
			target: { enum: ['wordpress', 'webhook'] },
			requested_count: { type: 'integer', minimum: 0, description: 'Posts taken.' },
			created_count: { type: 'integer', minimum: 0, description: 'Posts created on the site (or first delivered to the webhook).' },
			updated_count: { type: 'integer', minimum: 0, description: 'Posts updated in place.' },
			unchanged_count: { type: 'integer', minimum: 0, description: 'Posts the site already had in this version: nothing was sent.' },
			failed_count: { type: 'integer', minimum: 0 },
			failed_posts: { type: 'array', items: ref('FailedPost') },
			date_created: ref('Timestamp'),
			date_completed: { ...nullable(ref('Timestamp')), description: 'Null while pending or running.' },
		}),
	},
	PublicationResponse: success({ data: ref('Publication') }, 'The publication.'),
	Removed: success({ message: { type: 'string' } }, 'Removed.'),
	OpenApiDocument: {
		type: 'object',
		required: ['openapi', 'info', 'paths'],
		properties: {
			openapi: { type: 'string', pattern: '^3\\.1\\.' },
			info: { type: 'object', required: ['title', 'version'], properties: { title: { type: 'string' }, version: { type: 'string' } } },
			paths: { type: 'object' },
		},
		description: 'This document.',
	},
};

/** The error statuses a route can answer; each is the envelope, with a meaning of its own. */
const errorResponses: Record<number, { name: string; description: string }> = {
	400: { name: 'BadRequest', description: 'A parameter is missing or invalid (identifiers must be positive integers), or the body is not a JSON object.' },
	401: {
		name: 'Unauthorized',
		description: 'The Bearer token is missing, malformed, signed with another secret, expired, or an unknown static token.',
	},
	402: { name: 'PaymentRequired', description: 'The token balance does not cover the operation; nothing was charged.' },
	403: { name: 'Forbidden', description: 'The resource belongs to another user (admins included).' },
	404: { name: 'NotFound', description: 'The website or generation does not exist.' },
	409: { name: 'Conflict', description: 'A concurrent generation is already active.' },
	500: { name: 'InternalServerError', description: 'An unexpected error; the message leaks nothing.' },
	502: { name: 'BadGateway', description: 'The AI provider failed after bounded retries, or none is configured; the tokens were refunded.' },
	503: { name: 'ServiceUnavailable', description: 'Directus is under pressure or shutting down; retry later.' },
};

/** Every status in `statuses` as a reference to its shared response, with a route-specific description if given. */
function errors(statuses: (number | [number, string])[]): Json {
	const responses: Json = {};
	for (const entry of [...statuses, 500, 503]) {
		const [status, description] = Array.isArray(entry) ? entry : [entry, undefined];
		const shared = errorResponses[status];
		if (!shared) throw new TypeError(`No shared response for status ${status}`);
		responses[String(status)] = { $ref: `#/components/responses/${shared.name}`, ...(description ? { description } : {}) };
	}
	return responses;
}

const json = (schema: Json, description: string): Json => ({ description, content: { 'application/json': { schema } } });
const body = (name: string): Json => ({ required: true, content: { 'application/json': { schema: ref(name) } } });
const pseoIdQuery: Json = {
	name: 'pseo_id',
	in: 'query',
	required: true,
	description: 'The website; a positive integer, given once.',
	schema: ref('Identifier'),
};
const noToken = { security: [] };
const tokenRefusedAnyway: [number, string] = [
	401,
	'Only when a Bearer token is sent and refused: the route needs none, but Directus checks every token it receives.',
];

/** The operations, by path relative to /pseo-endpoints. */
function operations(): Json {
	return {
		'/': {
			get: {
				operationId: 'getHealth',
				tags: ['Health'],
				summary: 'Health check (4.1)',
				...noToken,
				responses: { 200: json(ref('Health'), 'The extension is up.'), ...errors([tokenRefusedAnyway]) },
			},
		},
		'/openapi.json': {
			get: {
				operationId: 'getOpenApiDocument',
				tags: ['Health'],
				summary: 'This OpenAPI document',
				...noToken,
				responses: { 200: json(ref('OpenApiDocument'), 'The OpenAPI 3.1 document.'), ...errors([tokenRefusedAnyway]) },
			},
		},
		'/pseo': {
			post: {
				operationId: 'createWebsite',
				tags: ['Websites'],
				summary: 'Register a website (4.3)',
				requestBody: body('NewWebsite'),
				responses: {
					201: json(ref('WebsiteCreated'), 'Created.'),
					...errors([400, 401, [403, 'The caller\'s role has no permission to create websites.']]),
				},
			},
		},
		'/trigger/on-demand-generation': {
			post: {
				operationId: 'startOnDemandGeneration',
				tags: ['Generations'],
				summary: 'Generate one page in test mode (4.4)',
				description:
					'Takes the highest-priority route of the website\'s current plan that has no post yet, charges `token_per_page` and runs in the background.',
				requestBody: body('OnDemandGenerationRequest'),
				responses: {
					202: json(ref('GenerationAccepted'), 'Accepted; poll the generation.'),
					...errors([
						[400, 'Invalid body, `post_count` other than 1, no content plan, or no route left without a post.'],
						401,
						402,
						403,
						[404, 'The website does not exist.'],
						[409, 'A job of this website is pending or running.'],
					]),
				},
			},
		},
		'/trigger/bulk-generation': {
			post: {
				operationId: 'startBulkGeneration',
				tags: ['Generations'],
				summary: 'Generate many pages (4.5)',
				description:
					'Takes the `post_count` highest-priority routes of the website\'s current plan that have no post yet, charges `token_per_batch_page` each and runs in the background.',
				requestBody: body('BulkGenerationRequest'),
				responses: {
					202: json(ref('GenerationAccepted'), 'Accepted; poll the generation.'),
					...errors([
						[400, 'Invalid body, no content plan, or fewer routes without a post than `post_count`.'],
						401,
						402,
						403,
						[404, 'The website does not exist.'],
						[409, 'A job of this website is pending or running.'],
					]),
				},
			},
		},
		'/generations': {
			get: {
				operationId: 'listGenerations',
				tags: ['Generations'],
				summary: 'List a website\'s jobs (4.7)',
				parameters: [pseoIdQuery],
				responses: {
					200: json(ref('GenerationList'), 'Up to 50 jobs, newest first.'),
					...errors([400, 401, 403, [404, 'The website does not exist.']]),
				},
			},
		},
		'/generations/{id}': {
			get: {
				operationId: 'getGeneration',
				tags: ['Generations'],
				summary: 'Read one job (4.6)',
				parameters: [{ name: 'id', in: 'path', required: true, description: 'The `generation_id`.', schema: ref('Identifier') }],
				responses: {
					200: json(ref('GenerationResponse'), 'The job.'),
					...errors([400, 401, 403, [404, 'The generation does not exist.']]),
				},
			},
		},
		'/generations/{id}/cancel': {
			post: {
				operationId: 'cancelGeneration',
				tags: ['Generations'],
				summary: 'Stop a pending or running job',
				description:
					'Chat jobs stop taking pages, batch jobs cancel their provider batch. Every page not yet created ends in `failed_routes` with the error `cancelled` and is refunded; the job ends `failed`. The cancel is stored: it holds across instances and restarts.',
				parameters: [{ name: 'id', in: 'path', required: true, description: 'The `generation_id`.', schema: ref('Identifier') }],
				responses: {
					200: json(ref('CancelledGeneration'), 'The job after its cancel.'),
					...errors([400, 401, 403, [404, 'The generation does not exist.'], [409, 'The job has already finished.']]),
				},
			},
		},
		'/generations/{id}/retry': {
			post: {
				operationId: 'retryGeneration',
				tags: ['Generations'],
				summary: 'Run a finished job\'s failed pages again',
				description:
					'Starts a new job in the original job\'s mode, at that mode\'s rate, for the routes of its `failed_routes` that have no post yet.',
				parameters: [{ name: 'id', in: 'path', required: true, description: 'The `generation_id` of the finished job.', schema: ref('Identifier') }],
				responses: {
					202: json(ref('GenerationAccepted'), 'Accepted; poll the new generation.'),
					...errors([
						[400, 'The job is still pending or running, or none of its failed routes is left to retry.'],
						401,
						402,
						403,
						[404, 'The generation does not exist.'],
						[409, 'Another job of this website is pending or running.'],
					]),
				},
			},
		},
		'/posts/{id}/regenerate': {
			post: {
				operationId: 'regeneratePost',
				tags: ['Generations'],
				summary: 'Write a new version of one page',
				description:
					'Starts an on-demand job of one page for the post\'s route, charged `token_per_page`, with the optional instructions added to the prompt. The new content replaces the post; the previous version stays as a Directus revision of the post, to compare and revert in the app.',
				parameters: [{ name: 'id', in: 'path', required: true, description: 'The id of the post (a generated page).', schema: ref('Identifier') }],
				requestBody: { required: false, content: { 'application/json': { schema: ref('RegenerateRequest') } } },
				responses: {
					202: json(ref('GenerationAccepted'), 'Accepted; poll the generation.'),
					...errors([
						[400, 'Invalid body: unknown fields, or instructions that are not a string of at most 2,000 characters.'],
						401,
						402,
						403,
						[404, 'The post does not exist.'],
						[409, 'A job of the post\'s website is pending or running.'],
					]),
				},
			},
		},
		'/generate/main-json': {
			post: {
				operationId: 'generateContentPlan',
				tags: ['Content plans'],
				summary: 'Generate a website\'s content plan (4.8)',
				description:
					'Charges `token_per_main_json`, asks the AI for a plan that avoids the routes the website already has, and stores it as the website\'s current plan. Synchronous: it can take a minute.',
				requestBody: body('PlanRequest'),
				responses: {
					200: json(ref('PlanResponse'), 'The plan.'),
					...errors([
						400,
						401,
						402,
						403,
						[404, 'The website does not exist.'],
						[409, 'A content plan of this user is already being generated.'],
						502,
					]),
				},
			},
		},
		'/plan/import': {
			post: {
				operationId: 'importContentPlan',
				tags: ['Content plans'],
				summary: 'Add plan pages from data (rows or a CSV, JSON or JSON Lines file)',
				description:
					'Each row gives one plan page through the template. Rows without a value for a placeholder, or with an invalid route, are skipped and counted; so are routes repeated in the data, already in the plan or on the website\'s sitemap. Charges `PSEO_TOKEN_PER_IMPORTED_PAGE` per added page (default 0). Takes part in the per-user plan lock.',
				requestBody: body('PlanImportRequest'),
				responses: {
					200: json(ref('PlanImportResponse'), 'What was added and skipped.'),
					...errors([
						[400, 'A bad body, or a row that is not a flat object (the message names the row).'],
						401,
						402,
						[403, 'The website or the file belongs to another user.'],
						[404, 'The website or the file does not exist.'],
						[409, 'A content plan of this user is already being generated or imported.'],
					]),
				},
			},
		},
		'/fetch-sitemap': {
			get: {
				operationId: 'fetchSitemap',
				tags: ['Sitemap'],
				summary: 'Read the website\'s sitemap (4.9)',
				description:
					'Tries /sitemap.xml, /sitemap_index.xml, /wp-sitemap.xml and /sitemap (and robots.txt), following index files.',
				parameters: [pseoIdQuery],
				responses: {
					200: json(ref('SitemapResponse'), 'The page URLs; empty when there is no sitemap or the site is unreachable.'),
					...errors([400, 401, 403, [404, 'The website does not exist.']]),
				},
			},
		},
		'/pseo/{id}/publishing': {
			put: {
				operationId: 'savePublishingTarget',
				tags: ['Publishing'],
				summary: 'Set where the website publishes',
				description:
					'Checks the target before saving it: the WordPress user must be able to create posts (and publish them, for `default_status: publish`); every address must pass the SSRF guard. The secret is stored encrypted with a key derived from the instance\'s SECRET and never returned.',
				parameters: [{ name: 'id', in: 'path', required: true, description: 'The website (`pseo_id`).', schema: ref('Identifier') }],
				requestBody: body('PublishingTargetRequest'),
				responses: {
					200: json(ref('PublishingTargetResponse'), 'Saved.'),
					...errors([[400, 'Invalid body, an address the guard refuses, or WordPress refused the credentials (its reason is given).'], 401, 403, [404, 'The website does not exist.']]),
				},
			},
			get: {
				operationId: 'getPublishingTarget',
				tags: ['Publishing'],
				summary: 'Read the website\'s publishing target',
				parameters: [{ name: 'id', in: 'path', required: true, description: 'The website (`pseo_id`).', schema: ref('Identifier') }],
				responses: {
					200: json(ref('PublishingTargetResponse'), 'The target, without its secret.'),
					...errors([400, 401, 403, [404, 'The website does not exist or has no target.']]),
				},
			},
			delete: {
				operationId: 'deletePublishingTarget',
				tags: ['Publishing'],
				summary: 'Remove the website\'s publishing target',
				parameters: [{ name: 'id', in: 'path', required: true, description: 'The website (`pseo_id`).', schema: ref('Identifier') }],
				responses: { 200: json(ref('Removed'), 'Removed.'), ...errors([400, 401, 403, [404, 'The website does not exist or has no target.']]) },
			},
		},
		'/publish': {
			post: {
				operationId: 'publish',
				tags: ['Publishing'],
				summary: 'Send posts to the website',
				description:
					'A durable job: leased, resumed after a crash, run once across instances. Each post is created on the site, updated in place, or skipped when the site already has this version; a create whose answer was lost is found again by its marker, never repeated. One publication per website at a time; it does not block generation.',
				requestBody: body('PublishRequest'),
				responses: {
					202: json(ref('PublicationAccepted'), 'Accepted; poll the publication.'),
					...errors([[400, 'Invalid body, or post ids that are not the website\'s.'], 401, 403, [404, 'The website does not exist.'], [409, 'The website has no publishing target, or a publication of it is pending or running.']]),
				},
			},
		},
		'/publications/{id}': {
			get: {
				operationId: 'getPublication',
				tags: ['Publishing'],
				summary: 'Read one publication',
				parameters: [{ name: 'id', in: 'path', required: true, description: 'The `publication_id`.', schema: ref('Identifier') }],
				responses: { 200: json(ref('PublicationResponse'), 'The publication.'), ...errors([400, 401, 403, [404, 'The publication does not exist.']]) },
			},
		},
		'/balance': {
			get: {
				operationId: 'getBalance',
				tags: ['Tokens'],
				summary: 'The caller\'s token balance and the rates',
				responses: { 200: json(ref('Balance'), 'The balance.'), ...errors([401]) },
			},
		},
	};
}

/** The OpenAPI 3.1 document of /pseo-endpoints, for extension version `version`. */
export function openApiDocument(version: string): Json {
	return {
		openapi: '3.1.0',
		info: {
			title: 'pseo-automation',
			version,
			summary: 'Programmatic-SEO content generation inside Directus.',
			description:
				'Websites, content plans, background page-generation jobs and a token balance. Every route except the health check and this document needs `Authorization: Bearer <token>`: a Directus access token (`POST /auth/login` on the Directus root) or a user\'s static token. Directus\'s own `/server/specs/oas` does not list these routes.',
			license: { name: 'MIT', identifier: 'MIT' },
		},
		servers: [{ url: '/pseo-endpoints', description: 'The Directus instance serving this document.' }],
		security: [{ bearerAuth: [] }],
		tags: [
			{ name: 'Health' },
			{ name: 'Websites', description: 'PSEO records.' },
			{ name: 'Generations', description: 'Background page-generation jobs.' },
			{ name: 'Content plans', description: 'The `main_json` of a website.' },
			{ name: 'Sitemap' },
			{ name: 'Tokens' },
			{ name: 'Publishing', description: 'Publishing targets (WordPress, signed webhooks) and publications.' },
		],
		paths: operations(),
		components: {
			securitySchemes: {
				bearerAuth: {
					type: 'http',
					scheme: 'bearer',
					description: 'A Directus access token (from `POST /auth/login`) or a static token from the user\'s profile.',
				},
			},
			schemas,
			responses: Object.fromEntries(
				Object.values(errorResponses).map(({ name, description }) => [name, json(ref('ErrorEnvelope'), description)]),
			),
		},
	};
}
