import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROUTES } from '../src/contracts/route-table.ts';
import { buildOpenApi } from '../src/openapi/build-openapi.ts';
import { call, createUser, eventually, waitForJob, type TestUser } from './support/api.ts';
import { startDirectus, type DirectusInstance } from './support/directus.ts';
import { startFakeProvider, type FakeProvider } from './support/fake-provider/server.ts';
import { legAvailable } from './support/legs.ts';

/*
 * The OpenAPI document's request examples are requests a client can send as they are: each one goes to a running
 * Directus with the extension, in an order that builds the world it speaks of (website 1, its plan, generation 1,
 * post 1...), and must get a success status the document lists for its operation, with a body the document
 * describes (`call` checks every answer against the document). Only the webhook example's address is replaced
 * by a receiver this test runs: the documented one is a reader's own.
 */

const LEG = 'sqlite' as const;

type Json = Record<string, any>;
const document = buildOpenApi(ROUTES, '0.0.0') as Json;

interface DocumentedRequest {
	/** `operationId:example`, or the operationId alone for an operation that takes no parameter and no body. */
	key: string;
	method: string;
	path: string;
	body: unknown;
	open: boolean;
	successes: number[];
}

/** Every request the document shows, built from its parameter and body examples. */
function documentedRequests(): DocumentedRequest[] {
	const requests: DocumentedRequest[] = [];
	for (const [template, item] of Object.entries<Json>(document['paths'])) {
		for (const [method, operation] of Object.entries<Json>(item)) {
			// The optional Idempotency-Key header (a shared reference) is not part of the examples.
			const parameters: Json[] = (operation['parameters'] ?? []).filter((parameter: Json) => !('$ref' in parameter));
			const bodyExamples: Json = operation['requestBody']?.content['application/json'].examples ?? {};
			const names = new Set([...Object.keys(bodyExamples), ...parameters.flatMap((parameter) => Object.keys(parameter['examples'] ?? {}))]);
			if (names.size === 0 && (parameters.length > 0 || operation['requestBody'])) throw new Error(`${operation['operationId']} documents no request example`);
			for (const name of names.size > 0 ? names : [undefined]) {
				let path = template;
				const query = new URLSearchParams();
				for (const parameter of parameters) {
					const value = parameter['examples']?.[name ?? '']?.value as string | undefined;
					if (value === undefined) throw new Error(`${operation['operationId']} example ${name} gives no ${parameter['name']}`);
					if (parameter['in'] === 'path') path = path.replace(`{${parameter['name']}}`, encodeURIComponent(value));
					else query.append(parameter['name'], value);
				}
				requests.push({
					key: name ? `${operation['operationId']}:${name}` : operation['operationId'],
					method: method.toUpperCase(),
					path: `/pseo-endpoints${path}${query.size > 0 ? `?${query}` : ''}`,
					body: name ? bodyExamples[name]?.value : undefined,
					open: Array.isArray(operation['security']) && operation['security'].length === 0,
					successes: Object.keys(operation['responses']).map(Number).filter((status) => status < 300),
				});
			}
		}
	}
	return requests;
}

/** The order the examples are sent in: each one finds what the earlier ones made. */
const SCENARIO = [
	'getHealth',
	'getOpenApiDocument',
	'getBalance',
	'listProviders',
	'createWebsite:bakery',
	'fetchSitemap:website',
	'generateContentPlan:bakery',
	'importContentPlan:rows',
	'importContentPlan:sync',
	'startOnDemandGeneration:onePage',
	'startBulkGeneration:threePages',
	'listGenerations:website',
	'getGeneration:first',
	'cancelGeneration:bulk',
	'retryGeneration:cancelled',
	'regeneratePost:withInstructions',
	'startRefreshGeneration:allStale',
	'savePublishingTarget:webhook',
	'getPublishingTarget:website',
	'publish:everything',
	'getPublication:first',
	'deletePublishingTarget:website',
	'getMetrics',
];

/** Examples only an admin may send (the metrics are for operators); the others are sent as an editor. */
const AS_ADMIN = new Set(['getMetrics']);

describe.skipIf(!legAvailable(LEG))('the OpenAPI document\'s request examples, sent to a running instance', () => {
	const requests = new Map(documentedRequests().map((request) => [request.key, request]));
	let fake: FakeProvider;
	let directus: DirectusInstance;
	let receiver: http.Server;
	let receiverUrl: string;
	let user: TestUser;

	beforeAll(async () => {
		receiver = http.createServer((req, res) => {
			req.resume();
			req.on('end', () => res.writeHead(200).end());
		});
		await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
		receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hooks/pseo`;
		fake = await startFakeProvider();
		directus = await startDirectus({
			leg: LEG,
			// The receiver is on loopback; quality checks are not what this suite is about, so every post is publishable.
			env: { OPENAI_BASE_URL: fake.url, PSEO_ALLOW_PRIVATE_NETWORKS: 'true', PSEO_QUALITY_MIN_WORDS: '0', PSEO_LEASE_MS: '15000' },
		});
		user = await createUser(directus, { balance: 1000 });
	}, 180_000);

	afterAll(async () => {
		await directus?.dispose();
		await fake?.close();
		await new Promise<void>((resolve) => receiver?.close(() => resolve()));
	});

	it('the scenario sends every example the document shows, each once', () => {
		expect([...requests.keys()].sort()).toEqual([...SCENARIO].sort());
	});

	/** What must hold before an example is sent, beyond the examples sent before it. */
	const before: Record<string, () => void | Promise<void>> = {
		// The bulk job waits at the provider, so that the cancel example finds it running.
		'startBulkGeneration:threePages': () => fake.configure({ holdBatches: true }),
		'retryGeneration:cancelled': () => fake.configure({ holdBatches: false }),
		// The price list's prices change again, after its pages were written: their posts are stale.
		'startRefreshGeneration:allStale': async () => {
			const sync = requests.get('importContentPlan:sync')!.body as Json;
			const res = await call(directus, 'POST', '/pseo-endpoints/plan/import', {
				token: user.token,
				body: { ...sync, rows: sync['rows'].map((row: Json) => ({ ...row, price_from_gbp: row['price_from_gbp'] + 10 })) },
			});
			expect(res.body.data).toMatchObject({ updated: 2 });
		},
	};
	/** What an example's answer must say for the examples after it to hold, and what they wait for. */
	const after: Record<string, (body: Json) => Promise<void>> = {
		'createWebsite:bakery': async (body) => expect(body['data'].id).toBe(1),
		'startOnDemandGeneration:onePage': async (body) => {
			expect(body['generation_id']).toBe(1);
			expect((await waitForJob(directus, user, 1))['status']).toBe('completed');
		},
		'startBulkGeneration:threePages': async (body) => {
			expect(body['generation_id']).toBe(2);
			await eventually(async () => fake.requests.some((entry) => entry.method === 'POST' && entry.path === '/v1/batches'), 30_000, 'the bulk job\'s batch');
		},
		'importContentPlan:sync': async (body) => expect(body['data']).toMatchObject({ added: 0, updated: 1, unchanged: 1, retired: 1 }),
		'cancelGeneration:bulk': async (body) => expect(body['data'].status).toBe('failed'),
		'retryGeneration:cancelled': async (body) => expect((await waitForJob(directus, user, body['generation_id']))['status']).toBe('completed'),
		'regeneratePost:withInstructions': async (body) => expect((await waitForJob(directus, user, body['generation_id']))['status']).toBe('completed'),
		'startRefreshGeneration:allStale': async (body) => expect(await waitForJob(directus, user, body['generation_id'])).toMatchObject({ kind: 'refresh', status: 'completed' }),
		'publish:everything': async (body) => {
			expect(body['publication_id']).toBe(1);
			await eventually(async () => {
				const read = await call(directus, 'GET', '/pseo-endpoints/publications/1', { token: user.token });
				return read.body.data?.status === 'completed';
			}, 60_000, 'the publication');
		},
	};

	for (const key of SCENARIO) {
		it(`${key} succeeds as documented`, async () => {
			const request = requests.get(key);
			expect(request, `the document shows no example ${key}`).toBeDefined();
			await before[key]?.();
			let body = request!.body;
			if (key === 'savePublishingTarget:webhook') body = { ...(body as Json), url: receiverUrl };
			const token = request!.open ? null : AS_ADMIN.has(key) ? directus.adminToken : user.token;
			const res = await call(directus, request!.method, request!.path, { token, ...(body === undefined ? {} : { body }) });
			expect(request!.successes, `${request!.method} ${request!.path} -> ${res.status}: ${JSON.stringify(res.body)}`).toContain(res.status);
			await after[key]?.(res.body);
		});
	}
});
