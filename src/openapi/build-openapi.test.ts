import { Validator } from '@seriousme/openapi-schema-validator';
import type { Request } from 'express';
import { describe, expect, it } from 'vitest';
import { openApiAjv } from '../../test/support/response-contract.ts';
import { ROUTES } from '../contracts/route-table.ts';
import { createWebsiteRoute } from '../contracts/websites.ts';
import { parseRequest } from '../http/parse-request.ts';
import { ENDPOINTS } from '../pseo-endpoint/routes/health.ts';
import { buildOpenApi } from './build-openapi.ts';

const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];

type Operation = {
	responses: Record<string, { $ref?: string; content?: Record<string, { schema: unknown }> }>;
	security?: unknown[];
	requestBody?: { required: boolean; content: Record<string, { schema: { $ref: string }; examples?: Record<string, { summary: string; value: unknown }> }> };
	parameters?: { name: string; in: string; $ref?: string; examples?: Record<string, { value: string }> }[];
};

function operationsOf(document: Record<string, any>): Map<string, Operation> {
	const found = new Map<string, Operation>();
	for (const [path, item] of Object.entries<Record<string, Operation>>(document['paths'])) {
		for (const method of METHODS) if (item[method]) found.set(`${method.toUpperCase()} ${path}`, item[method]);
	}
	return found;
}

/** `GET /generations?pseo_id=X` and `GET /generations/:id` as OpenAPI names them: `GET /generations`, `GET /generations/{id}`. */
const asOperation = (endpoint: string) => endpoint.replace(/\?.*$/, '').replace(/:(\w+)/g, '{$1}');

describe('buildOpenApi', () => {
	const document = buildOpenApi(ROUTES, '1.2.3') as Record<string, any>;

	it('is a valid OpenAPI 3.1 document', async () => {
		const validator = new Validator();
		const result = await validator.validate(structuredClone(document));
		expect(result.errors).toBeUndefined();
		expect(result.valid).toBe(true);
		expect(validator.version).toBe('3.1');
	});

	it('the validator refuses a broken document (the control case)', async () => {
		const broken = structuredClone(document) as Record<string, any>;
		delete broken['paths']['/pseo']['post']['responses']['201']['description'];
		expect((await new Validator().validate(broken)).valid).toBe(false);
	});

	it('carries the version it is given', () => {
		expect(document['info']).toMatchObject({ title: 'pseo-automation', version: '1.2.3' });
	});

	it('4.1 every endpoint the health check lists has an operation, and every operation is listed', () => {
		expect([...operationsOf(document).keys()].sort()).toEqual(ENDPOINTS.map(asOperation).sort());
	});

	it('5 every operation needs the Bearer token except the health check and this document', () => {
		const open = [...operationsOf(document)].filter(([, operation]) => operation.security?.length === 0).map(([name]) => name);
		expect(open.sort()).toEqual(['GET /', 'GET /openapi.json']);
		expect(document['security']).toEqual([{ bearerAuth: [] }]);
		expect(document['components'].securitySchemes.bearerAuth).toMatchObject({ type: 'http', scheme: 'bearer' });
	});

	it('7 every error response of every operation is the envelope, and every authenticated operation documents 401', () => {
		for (const [name, operation] of operationsOf(document)) {
			for (const [status, response] of Object.entries(operation.responses)) {
				if (Number(status) < 400) continue;
				expect(response.$ref, `${name} ${status}`).toMatch(/^#\/components\/responses\//);
			}
			expect(Object.keys(operation.responses), name).toEqual(expect.arrayContaining(['401', '500', '503']));
		}
		for (const response of Object.values<any>(document['components'].responses)) {
			expect(response.content['application/json'].schema).toEqual({ $ref: '#/components/schemas/ErrorEnvelope' });
		}
	});

	it('every $ref in the document points at something in it', () => {
		const refs: string[] = [];
		const walk = (node: unknown): void => {
			if (Array.isArray(node)) node.forEach(walk);
			else if (typeof node === 'object' && node !== null) {
				for (const [key, value] of Object.entries(node)) key === '$ref' ? refs.push(value as string) : walk(value);
			}
		};
		walk(document);
		expect(refs.length).toBeGreaterThan(20);
		for (const ref of refs) {
			const target = ref
				.replace(/^#\//, '')
				.split('/')
				.reduce<any>((node, part) => node?.[part.replaceAll('~1', '/').replaceAll('~0', '~')], document);
			expect(target, ref).toBeTypeOf('object');
		}
	});

	it('every schema compiles under JSON Schema draft 2020-12 in strict mode, and its references resolve', () => {
		const ajv = openApiAjv(document);
		for (const name of Object.keys(document['components'].schemas)) {
			expect(() => ajv.compile({ $ref: `openapi.json#/components/schemas/${name}` }), name).not.toThrow();
		}
	});

	it('the envelope schemas accept what the code writes and refuse what it must not', () => {
		const ajv = openApiAjv(document);
		const valid = (name: string, value: unknown) => ajv.validate(`openapi.json#/components/schemas/${name}`, value);
		const timestamp = '2026-01-31T09:30:00.000Z';
		expect(valid('ErrorEnvelope', { success: false, error: 'PSEO record 9 does not exist.', code: 'PSEO_NOT_FOUND', timestamp })).toBe(true);
		expect(valid('ErrorEnvelope', { success: false, error: 'x', timestamp })).toBe(false);
		expect(valid('ErrorEnvelope', { errors: [{ message: 'x' }] })).toBe(false);
		expect(valid('ErrorEnvelope', { success: false, error: 'x', code: 'X', timestamp: '2026-01-31T09:30:00Z' })).toBe(false);
		const job = {
			id: 4,
			pseo_id: 1,
			status: 'failed',
			kind: 'bulk',
			requested_count: 2,
			created_count: 1,
			failed_count: 1,
			failed_routes: [{ route: '/a', error: 'refused' }],
			date_created: timestamp,
			date_completed: null,
			last_error: null,
			attention: false,
			provider: 'openai',
			model: 'gpt-5.4-mini',
		};
		expect(valid('GenerationSummary', job)).toBe(true);
		expect(valid('GenerationSummary', { ...job, provider: null, model: null })).toBe(true);
		const { provider: _provider, ...withoutProvider } = job;
		expect(valid('GenerationSummary', withoutProvider)).toBe(false);
		// Every job names what started it, from a closed list.
		expect(valid('GenerationSummary', { ...job, kind: 'refresh' })).toBe(true);
		expect(valid('GenerationSummary', { ...job, kind: 'sync' })).toBe(false);
		const { kind: _kind, ...withoutKind } = job;
		expect(valid('GenerationSummary', withoutKind)).toBe(false);
		const trouble = { code: 'bad_request', message: 'Provider rejected the request (HTTP 400)', at: timestamp, attempts: 2, since: timestamp };
		expect(valid('GenerationSummary', { ...job, last_error: trouble, attention: true })).toBe(true);
		// The start of the streak is a timestamp on the wire, not the epoch ms the database keeps.
		expect(valid('GenerationSummary', { ...job, last_error: { ...trouble, since: 1 } })).toBe(false);
		const { since: _since, ...withoutSince } = trouble;
		expect(valid('GenerationSummary', { ...job, last_error: withoutSince })).toBe(false);
		expect(valid('GenerationSummary', { ...job, last_error: { ...trouble, attempts: 0 } })).toBe(false);
		const { attention: _attention, ...withoutAttention } = job;
		expect(valid('GenerationSummary', withoutAttention)).toBe(false);
		const usage = { prompt_tokens: 1200, completion_tokens: 800, requests: 2 };
		const ran = { provider: 'anthropic', model: 'claude-haiku-4-5' };
		expect(valid('Generation', { ...job, date_updated: timestamp, ...ran, usage })).toBe(true);
		expect(valid('Generation', { ...job, date_updated: timestamp, provider: null, model: null, usage })).toBe(true);
		expect(valid('Generation', { ...job, date_updated: timestamp, ...ran, provider: 'mistral', usage })).toBe(false);
		expect(valid('Generation', { ...withoutProvider, date_updated: timestamp, usage })).toBe(false);
		expect(valid('Generation', { ...job, date_updated: timestamp })).toBe(false);
		expect(valid('Generation', { ...job, date_updated: timestamp, usage: { ...usage, requests: -1 } })).toBe(false);
		expect(valid('GenerationSummary', { ...job, date_updated: timestamp })).toBe(false);
		expect(valid('GenerationSummary', { ...job, usage })).toBe(false);
		expect(valid('Generation', { ...job, date_updated: timestamp, usage, status: 'done' })).toBe(false);
	});

	it('every POST that creates or charges takes an Idempotency-Key, answers 409 and 422 for it, and says when an answer is replayed', () => {
		const keyed = [...operationsOf(document)].filter(([, operation]) => (operation.parameters ?? []).some((parameter) => parameter.$ref === '#/components/parameters/IdempotencyKey'));
		expect(keyed.map(([name]) => name).sort()).toEqual([
			'POST /generate/main-json',
			'POST /generations/{id}/cancel',
			'POST /generations/{id}/retry',
			'POST /plan/import',
			'POST /posts/{id}/regenerate',
			'POST /publish',
			'POST /trigger/bulk-generation',
			'POST /trigger/on-demand-generation',
			'POST /trigger/refresh-generation',
		]);
		for (const [name, operation] of keyed) {
			expect(Object.keys(operation.responses), name).toEqual(expect.arrayContaining(['409', '422']));
			const success = Object.entries(operation.responses).filter(([status]) => status.startsWith('2'));
			for (const [status, response] of success) expect((response as { headers?: object }).headers, `${name} ${status}`).toHaveProperty('Idempotent-Replayed');
		}
		const header = document['components'].parameters.IdempotencyKey;
		expect(header).toMatchObject({ name: 'Idempotency-Key', in: 'header', required: false, schema: { minLength: 1, maxLength: 255 } });
	});

	it('every route that takes a body documents at least one request example, and every example names its parameters', () => {
		for (const [name, operation] of operationsOf(document)) {
			const bodyExamples = Object.keys(operation.requestBody?.content['application/json']?.examples ?? {});
			if (operation.requestBody) expect(bodyExamples.length, name).toBeGreaterThan(0);
			// The shared, optional Idempotency-Key header (a reference) takes part in no example.
			const located = (operation.parameters ?? []).filter((parameter) => !('$ref' in parameter));
			const parameterExamples = located.map((parameter) => Object.keys(parameter.examples ?? {}));
			for (const example of new Set([...bodyExamples, ...parameterExamples.flat()])) {
				for (const [index, parameter] of located.entries()) {
					expect(parameterExamples[index], `${name} example ${example} gives no ${parameter.name}`).toContain(example);
				}
			}
		}
	});

	it('every request example passes its route\'s own validation, and a broken one does not (the control case)', () => {
		let checked = 0;
		for (const route of ROUTES) {
			for (const [name, example] of Object.entries(route.examples ?? {})) {
				const request = { params: example.params ?? {}, query: example.query ?? {}, body: example.body } as Request;
				expect(() => parseRequest(route, request), `${route.operationId} ${name}`).not.toThrow();
				checked++;
			}
		}
		expect(checked).toBeGreaterThanOrEqual(ROUTES.filter((route) => route.body).length);
		expect(() => parseRequest(createWebsiteRoute, { body: { website_url: 'bakery.example', master_prompt: 'x' } } as Request)).toThrow(/absolute/);
	});

	it('every request example and every property example matches the schema the document gives it', () => {
		const ajv = openApiAjv(document);
		for (const [name, operation] of operationsOf(document)) {
			const media = operation.requestBody?.content['application/json'];
			for (const [example, { value }] of Object.entries(media?.examples ?? {})) {
				expect(ajv.validate(`openapi.json${media!.schema.$ref}`, value), `${name} ${example}: ${ajv.errorsText()}`).toBe(true);
			}
		}
		// A schema of the document, its references pointed at the document held by the validator.
		const pointed = (schema: unknown) => JSON.parse(JSON.stringify(schema).replaceAll('"#/components/', '"openapi.json#/components/'));
		let examples = 0;
		const walk = (node: unknown, path: string): void => {
			if (Array.isArray(node)) return node.forEach((item, index) => walk(item, `${path}/${index}`));
			if (typeof node !== 'object' || node === null) return;
			const { examples: given, ...schema } = node as Record<string, unknown>;
			if (Array.isArray(given) && !path.endsWith('/properties')) {
				const validate = ajv.compile(pointed(schema));
				for (const example of given) expect(validate(example), `${path}: ${JSON.stringify(example)}`).toBe(true);
				examples += given.length;
			}
			for (const [key, value] of Object.entries(schema)) walk(value, `${path}/${key}`);
		};
		walk(document['components'].schemas, '#/components/schemas');
		expect(examples).toBeGreaterThan(15);
	});
});
