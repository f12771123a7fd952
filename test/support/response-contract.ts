import Ajv2020, { type ValidateFunction } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { ROUTES } from '../../src/contracts/route-table.ts';
import { buildOpenApi } from '../../src/openapi/build-openapi.ts';

/*
 * Every response the suites receive from /pseo-endpoints is checked against the OpenAPI document, so the
 * document cannot drift from the code: `call` (api.ts) hands each one to `checkResponse`.
 */

const PREFIX = '/pseo-endpoints';
const DOCUMENT_ID = 'openapi.json';

/** Keywords of an OpenAPI 3.1 document (and of its Schema Objects) that are not JSON Schema's. */
const OPENAPI_KEYWORDS = [
	'openapi', 'info', 'jsonSchemaDialect', 'servers', 'paths', 'webhooks', 'components', 'security', 'tags',
	'externalDocs', 'discriminator', 'xml', 'example',
];

type Json = Record<string, any>;

/**
 * A draft 2020-12 validator (the dialect of OpenAPI 3.1) holding `document` as `openapi.json`, so that any schema in
 * it is reachable as `openapi.json#/json/pointer`. Strict: a misspelt keyword fails instead of being ignored.
 */
export function openApiAjv(document: Json): Ajv2020 {
	const ajv = new Ajv2020({ strict: true, allErrors: true });
	addFormats(ajv);
	ajv.addVocabulary(OPENAPI_KEYWORDS);
	ajv.addSchema(document, DOCUMENT_ID);
	return ajv;
}

const pointerPart = (part: string) => part.replaceAll('~', '~0').replaceAll('/', '~1');

/** Thrown when a response does not match what the document says of its route and status. */
class ResponseContractError extends Error {
	override name = 'ResponseContractError';
}

/** Checks responses against one document. */
class ResponseContract {
	readonly #document: Json;
	readonly #ajv: Ajv2020;
	readonly #validators = new Map<string, ValidateFunction>();
	/** Path templates as regular expressions, literal paths first (OpenAPI's matching rule). */
	readonly #routes: { template: string; pattern: RegExp }[];

	constructor(document: Json) {
		this.#document = document;
		this.#ajv = openApiAjv(document);
		this.#routes = Object.keys(document['paths'])
			.sort((a, b) => Number(a.includes('{')) - Number(b.includes('{')))
			.map((template) => ({
				template,
				pattern: new RegExp(`^${template.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\{[^}]+\}/g, '[^/]+')}$`, 'i'),
			}));
	}

	/** Throws a {@link ResponseContractError} when `body` is not what the document promises; ignores other paths. */
	check(method: string, url: string, status: number, contentType: string | null, body: unknown): void {
		const pathname = new URL(url).pathname;
		if (pathname !== PREFIX && !pathname.startsWith(`${PREFIX}/`)) return;
		// Express routes ignore a trailing slash; the endpoint's root is `/` either way.
		const path = pathname.slice(PREFIX.length).replace(/\/+$/, '') || '/';
		const template = this.#routes.find((route) => route.pattern.test(path))?.template;
		const operation = template ? this.#document['paths'][template][method.toLowerCase()] : undefined;
		const label = `${method} ${pathname} -> ${status}`;
		if (!template || !operation) {
			// An unknown path or method: the router's catch-all (or Directus before it) answers an error envelope.
			if (status < 400) throw new ResponseContractError(`${label}: no operation in the OpenAPI document, yet a success status`);
			this.#validate('#/components/schemas/ErrorEnvelope', label, body);
			return;
		}
		const responses = operation.responses as Json;
		const key = [String(status), `${String(status)[0]}XX`, 'default'].find((candidate) => candidate in responses);
		if (!key) {
			throw new ResponseContractError(
				`${label}: status ${status} is not documented for ${method.toUpperCase()} ${template} (documented: ${Object.keys(responses).join(', ')})\nbody: ${excerpt(body)}`,
			);
		}
		let pointer = `#/paths/${pointerPart(template)}/${method.toLowerCase()}/responses/${key}`;
		let response = responses[key] as Json;
		if (typeof response['$ref'] === 'string') {
			pointer = response['$ref'];
			response = this.#resolve(pointer);
		}
		const [mediaType] = Object.keys(response['content'] ?? {});
		if (!mediaType) {
			if (body !== null) throw new ResponseContractError(`${label}: the document promises no body\nbody: ${excerpt(body)}`);
			return;
		}
		if (!contentType?.startsWith(mediaType)) {
			throw new ResponseContractError(`${label}: content-type ${contentType}, the document promises ${mediaType}`);
		}
		this.#validate(`${pointer}/content/${pointerPart(mediaType)}/schema`, `${label} (${method.toUpperCase()} ${template}, response ${key})`, body);
	}

	#resolve(pointer: string): Json {
		let node: any = this.#document;
		for (const part of pointer.replace(/^#\//, '').split('/')) node = node?.[part.replaceAll('~1', '/').replaceAll('~0', '~')];
		if (!node) throw new ResponseContractError(`unresolvable reference ${pointer} in the OpenAPI document`);
		return node;
	}

	#validate(pointer: string, label: string, body: unknown): void {
		let validate = this.#validators.get(pointer);
		if (!validate) {
			validate = this.#ajv.compile({ $ref: `${DOCUMENT_ID}${pointer}` });
			this.#validators.set(pointer, validate);
		}
		if (!validate(body)) {
			const errors = this.#ajv.errorsText(validate.errors, { separator: '\n  ', dataVar: 'body' });
			throw new ResponseContractError(`${label}: the body does not match the OpenAPI document\n  ${errors}\nbody: ${excerpt(body)}`);
		}
	}
}

function excerpt(body: unknown): string {
	const text = JSON.stringify(body) ?? String(body);
	return text.length > 2000 ? `${text.slice(0, 2000)}…` : text;
}

let contract: ResponseContract | undefined;

/**
 * Checks one response against the OpenAPI document generated from the source's contracts (`src/openapi/build-openapi.ts`):
 * the operation by method and path template, the response by status (then `NXX`, then `default`), and the body by
 * that response's schema. A path under /pseo-endpoints that has no operation must answer an error envelope.
 */
export function checkResponse(method: string, url: string, status: number, contentType: string | null, body: unknown): void {
	contract ??= new ResponseContract(buildOpenApi(ROUTES, '0.0.0'));
	contract.check(method, url, status, contentType, body);
}
