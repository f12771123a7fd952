import { z } from 'zod';
import { contractRegistry } from '../contracts/contract-registry.ts';
import { ErrorEnvelope } from '../contracts/envelope.ts';
import type { ErrorStatus, RouteContract } from '../contracts/route-contract.ts';

/*
 * The OpenAPI 3.1 description of every route under /pseo-endpoints, served by GET /pseo-endpoints/openapi.json and
 * generated from the routes' contracts (src/contracts): the schemas the routes validate with are the schemas the
 * document shows, so the two cannot drift apart.
 *
 * Adding a route: declare its contract beside the others of its area with `defineRoute`, name its body and answer
 * schemas with `named`, and list it in `ROUTES` (route-table.ts). The unit test beside this file checks the
 * document against the OpenAPI 3.1 schema and against the health check's list; the integration suites check every
 * response they receive against it and send every request example it documents.
 */

type Json = Record<string, unknown>;

const SCHEMAS = '#/components/schemas/';
const ref = (name: string): Json => ({ $ref: `${SCHEMAS}${name}` });
const GENERATOR_OPTIONS = {
	target: 'draft-2020-12',
	metadata: contractRegistry,
	// Requests are documented as clients write them (before a transform trims or defaults a value); answers have no transforms.
	io: 'input',
	unrepresentable: 'any',
	// zod drops the examples and default of a transforming schema in input mode, taking them for the output's; the
	// contracts write them as input.
	override: ({ zodSchema, jsonSchema }: { zodSchema: unknown; jsonSchema: Json }) => {
		const meta = contractRegistry.get(zodSchema as z.ZodType);
		if (meta?.examples !== undefined) jsonSchema['examples'] = meta.examples;
		if (meta?.default !== undefined) jsonSchema['default'] = meta.default;
	},
} as const;

/** The error statuses a route can answer; each is the envelope, with a meaning of its own. */
const ERROR_RESPONSES: Record<number, { name: string; description: string }> = {
	400: { name: 'BadRequest', description: 'A parameter is missing or invalid (identifiers must be positive integers), or the body is not a JSON object.' },
	401: { name: 'Unauthorized', description: 'The Bearer token is missing, malformed, signed with another secret, expired, or an unknown static token.' },
	402: { name: 'PaymentRequired', description: 'The token balance does not cover the operation; nothing was charged.' },
	403: { name: 'Forbidden', description: 'The resource belongs to another user (admins included).' },
	404: { name: 'NotFound', description: 'The website or generation does not exist.' },
	409: { name: 'Conflict', description: 'A concurrent generation is already active.' },
	422: { name: 'UnprocessableContent', description: 'The Idempotency-Key was already used with another request body on this route.' },
	500: { name: 'InternalServerError', description: 'An unexpected error; the message leaks nothing.' },
	502: { name: 'BadGateway', description: 'The AI provider failed after bounded retries, or none is configured; the tokens were refunded.' },
	503: { name: 'ServiceUnavailable', description: 'Directus is under pressure or shutting down; retry later.' },
};

/** The bounds zod writes for every integer (the safe-integer range) say nothing a reader needs; they are left out. */
function withoutSafeIntegerBounds(node: unknown): unknown {
	if (Array.isArray(node)) return node.map(withoutSafeIntegerBounds);
	if (typeof node !== 'object' || node === null) return node;
	const out: Json = {};
	for (const [key, value] of Object.entries(node)) {
		if ((key === 'maximum' && value === Number.MAX_SAFE_INTEGER) || (key === 'minimum' && value === Number.MIN_SAFE_INTEGER)) continue;
		out[key] = withoutSafeIntegerBounds(value);
	}
	return out;
}

/** Every named schema of the contracts, as `components/schemas`. */
function componentSchemas(): Record<string, Json> {
	const { schemas } = z.toJSONSchema(contractRegistry, { ...GENERATOR_OPTIONS, uri: (id) => `${SCHEMAS}${id}` });
	const components: Record<string, Json> = {};
	for (const [name, schema] of Object.entries(schemas)) {
		// Shared definitions appear only for recursive schemas, which no contract has.
		if (name === '__shared') throw new TypeError('A contract schema is recursive; the document cannot hold it.');
		const { $schema: _dialect, $id: _id, id: _name, ...rest } = schema as Json;
		components[name] = withoutSafeIntegerBounds(rest) as Json;
	}
	return components;
}

/** A reference to a named schema; a body or an answer must be named, so the document shows it once. */
function schemaRef(schema: z.ZodType, where: string): Json {
	const name = contractRegistry.get(schema)?.id;
	if (!name) throw new TypeError(`${where} is not a named schema; declare it with named().`);
	return ref(name);
}

/** The parameters of an object schema of path or query values, each with the examples that give it a value. */
function parameters(route: RouteContract, location: 'path' | 'query'): Json[] {
	const schema = location === 'path' ? route.params : route.query;
	if (!schema) return [];
	if (!(schema instanceof z.ZodObject)) throw new TypeError(`${route.operationId}: the ${location} parameters must be an object schema.`);
	return Object.entries(schema.shape as Record<string, z.ZodType>).map(([name, field]) => {
		const { $schema: _dialect, description, ...fieldSchema } = z.toJSONSchema(field, GENERATOR_OPTIONS) as Json;
		const examples = Object.entries(route.examples ?? {}).flatMap(([example, request]) => {
			const value = (location === 'path' ? request.params : request.query)?.[name];
			return value === undefined ? [] : [[example, { value }]];
		});
		return {
			name,
			in: location,
			required: location === 'path' || !field.safeParse(undefined).success,
			...(description ? { description } : {}),
			schema: fieldSchema,
			...(examples.length > 0 ? { examples: Object.fromEntries(examples) } : {}),
		};
	});
}

/** Every status in `statuses` (and 500 and 503, which any route may answer) as a reference to its shared response. */
function errorResponses(statuses: ErrorStatus[]): Json {
	const responses: Json = {};
	for (const entry of [...statuses, 500, 503]) {
		const [status, description] = Array.isArray(entry) ? entry : [entry, undefined];
		const shared = ERROR_RESPONSES[status];
		if (!shared) throw new TypeError(`No shared response for status ${status}`);
		responses[String(status)] = { $ref: `#/components/responses/${shared.name}`, ...(description ? { description } : {}) };
	}
	return responses;
}

const json = (schema: Json, description: string, mediaType = 'application/json'): Json => ({ description, content: { [mediaType]: { schema } } });

/** What an Idempotency-Key adds to a route's errors: a 409 while its first request runs, a 422 for another body. */
function idempotentErrors(statuses: ErrorStatus[]): ErrorStatus[] {
	const inUse = 'or a request with the same Idempotency-Key is still running';
	const conflict = statuses.find((entry) => (Array.isArray(entry) ? entry[0] : entry) === 409);
	const conflictText = Array.isArray(conflict) ? `${conflict[1].replace(/\.$/, '')}, ${inUse}.` : `A request with the same Idempotency-Key is still running.`;
	const others = statuses.filter((entry) => entry !== conflict);
	return [...others, [409, conflictText], 422];
}

function operation(route: RouteContract): Json {
	const where = `${route.method.toUpperCase()} ${route.path}`;
	const parameterList = [
		...parameters(route, 'path'),
		...parameters(route, 'query'),
		...(route.idempotent ? [{ $ref: '#/components/parameters/IdempotencyKey' }] : []),
	];
	const bodyExamples = Object.entries(route.examples ?? {}).flatMap(([name, example]) =>
		example.body === undefined ? [] : [[name, { summary: example.summary, value: example.body }]],
	);
	const responses: Json = {};
	for (const [status, answer] of Object.entries(route.responses)) {
		const response = json(schemaRef(answer.schema, `${where} ${status}`), answer.description, answer.mediaType);
		responses[status] = route.idempotent ? { ...response, headers: { 'Idempotent-Replayed': { $ref: '#/components/headers/IdempotentReplayed' } } } : response;
	}
	return {
		operationId: route.operationId,
		tags: [route.tag],
		summary: route.summary,
		...(route.description ? { description: route.description } : {}),
		...(route.open ? { security: [] } : {}),
		...(parameterList.length > 0 ? { parameters: parameterList } : {}),
		...(route.body
			? {
					requestBody: {
						required: !route.bodyOptional,
						content: {
							'application/json': {
								schema: schemaRef(route.body, `${where} body`),
								...(bodyExamples.length > 0 ? { examples: Object.fromEntries(bodyExamples) } : {}),
							},
						},
					},
				}
			: {}),
		responses: { ...responses, ...errorResponses(route.idempotent ? idempotentErrors(route.errors) : route.errors) },
	};
}

/** The OpenAPI 3.1 document of `routes` (relative to /pseo-endpoints), for extension version `version`. */
export function buildOpenApi(routes: readonly RouteContract[], version: string): Json {
	const paths: Record<string, Json> = {};
	for (const route of routes) {
		const item = (paths[route.path] ??= {});
		if (item[route.method]) throw new TypeError(`Two contracts for ${route.method.toUpperCase()} ${route.path}`);
		item[route.method] = operation(route);
	}
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
		paths,
		components: {
			securitySchemes: {
				bearerAuth: {
					type: 'http',
					scheme: 'bearer',
					description: 'A Directus access token (from `POST /auth/login`) or a static token from the user\'s profile.',
				},
			},
			schemas: componentSchemas(),
			parameters: {
				IdempotencyKey: {
					name: 'Idempotency-Key',
					in: 'header',
					required: false,
					description:
						'Makes the request safe to retry (IETF draft "The Idempotency-Key HTTP Header Field"): the first request with a key runs, and its answer is kept for 24 hours, per user and route. A repeat with the same body gets the same answer with `Idempotent-Replayed: true`, even when the first answer was lost to a crash after its transaction committed; a repeat with another body is a 422, and one while the first still runs a 409. A request that failed leaves nothing: its retry runs afresh.',
					schema: { type: 'string', minLength: 1, maxLength: 255, pattern: '^[\\x21-\\x7e]+$' },
					examples: { uuid: { summary: 'A fresh UUID per logical request', value: '5f0c7e0e-3c52-4f0f-9d7e-2b8f9b1e4a11' } },
				},
			},
			headers: {
				IdempotentReplayed: {
					description: '`true` when this is the stored answer of an earlier request with the same Idempotency-Key.',
					schema: { type: 'string', enum: ['true'] },
				},
			},
			responses: Object.fromEntries(
				Object.values(ERROR_RESPONSES).map(({ name, description }) => [name, json(schemaRef(ErrorEnvelope, 'The error envelope'), description)]),
			),
		},
	};
}
