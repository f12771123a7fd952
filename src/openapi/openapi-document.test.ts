import { Validator } from '@seriousme/openapi-schema-validator';
import { describe, expect, it } from 'vitest';
import { openApiAjv } from '../../test/support/response-contract.ts';
import { ENDPOINTS } from '../pseo-endpoint/routes/health.ts';
import { openApiDocument } from './openapi-document.ts';

const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];

type Operation = { responses: Record<string, { $ref?: string; content?: Record<string, { schema: unknown }> }>; security?: unknown[] };

function operationsOf(document: Record<string, any>): Map<string, Operation> {
	const found = new Map<string, Operation>();
	for (const [path, item] of Object.entries<Record<string, Operation>>(document['paths'])) {
		for (const method of METHODS) if (item[method]) found.set(`${method.toUpperCase()} ${path}`, item[method]);
	}
	return found;
}

/** `GET /generations?pseo_id=X` and `GET /generations/:id` as OpenAPI names them: `GET /generations`, `GET /generations/{id}`. */
const asOperation = (endpoint: string) => endpoint.replace(/\?.*$/, '').replace(/:(\w+)/g, '{$1}');

describe('openApiDocument', () => {
	const document = openApiDocument('1.2.3') as Record<string, any>;

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
			requested_count: 2,
			created_count: 1,
			failed_count: 1,
			failed_routes: [{ route: '/a', error: 'refused' }],
			date_created: timestamp,
			date_completed: null,
		};
		expect(valid('GenerationSummary', job)).toBe(true);
		const usage = { prompt_tokens: 1200, completion_tokens: 800, requests: 2 };
		expect(valid('Generation', { ...job, date_updated: timestamp, usage })).toBe(true);
		expect(valid('Generation', { ...job, date_updated: timestamp })).toBe(false);
		expect(valid('Generation', { ...job, date_updated: timestamp, usage: { ...usage, requests: -1 } })).toBe(false);
		expect(valid('GenerationSummary', { ...job, date_updated: timestamp })).toBe(false);
		expect(valid('GenerationSummary', { ...job, usage })).toBe(false);
		expect(valid('Generation', { ...job, date_updated: timestamp, usage, status: 'done' })).toBe(false);
	});
});
