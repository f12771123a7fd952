import OpenAI, { NotFoundError, toFile } from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeProvider, type FakeProvider } from './server.ts';
import { startTenantRouter, type TenantRouter } from './tenant-router.ts';

/** A chat request the fake answers whatever its task: the default text format. */
const chat = (model: string) => ({ model, messages: [{ role: 'user' as const, content: 'Say hello.' }] });

describe('the tenant router in front of two suites\' fakes', () => {
	let router: TenantRouter;
	let a: FakeProvider;
	let b: FakeProvider;
	let client: OpenAI;

	beforeAll(async () => {
		[router, a, b] = await Promise.all([startTenantRouter(), startFakeProvider(), startFakeProvider()]);
		router.register('model-a', a.url);
		router.register('model-b', b.url);
		client = new OpenAI({ baseURL: router.url, apiKey: 'test-key', maxRetries: 0 });
	});
	afterAll(async () => {
		await Promise.all([router?.close(), a?.close(), b?.close()]);
	});

	it('passes a chat completion to the fake of the model it names, and to no other', async () => {
		const answer = await client.chat.completions.create(chat('model-a'));
		expect(answer.choices[0]?.message).toBeDefined();
		expect([a.countChat(), b.countChat()]).toEqual([1, 0]);
	});

	it('answers a model nobody registered as OpenAI answers an unknown model', async () => {
		const refused = await client.chat.completions.create(chat('model-nobody')).then(
			() => null,
			(error: unknown) => error,
		);
		expect(refused).toBeInstanceOf(NotFoundError);
		expect((refused as NotFoundError).code).toBe('model_not_found');
	});

	it('follows a batch by the ids its fake made: the upload by its lines\' model, then create, retrieve and results', async () => {
		const line = JSON.stringify({ custom_id: 'r1', method: 'POST', url: '/v1/chat/completions', body: chat('model-b') });
		const file = await client.files.create({ file: await toFile(Buffer.from(`${line}\n`), 'requests.jsonl'), purpose: 'batch' });
		const batch = await client.batches.create({ input_file_id: file.id, endpoint: '/v1/chat/completions', completion_window: '24h' });
		expect([a.countBatchesCreated(), b.countBatchesCreated()]).toEqual([0, 1]);
		let current = batch;
		for (let polls = 0; current.status !== 'completed' && polls < 20; polls++) current = await client.batches.retrieve(batch.id);
		expect(current.status).toBe('completed');
		const output = await (await client.files.content(current.output_file_id!)).text();
		expect(JSON.parse(output.trim()).custom_id).toBe('r1');
		// The account's list holds every suite's batches: the one above, from B's fake.
		const listed = await client.batches.list();
		expect(listed.data.map((item) => item.id)).toContain(batch.id);
		// A's fake was asked for its list, and for nothing of B's batch.
		const ofTheBatch = (entry: { method: string; path: string }) => !(entry.method === 'GET' && entry.path === '/v1/batches') && /^\/v1\/(batches|files)/.test(entry.path);
		expect(a.requests.filter(ofTheBatch)).toEqual([]);
		expect(b.requests.filter(ofTheBatch).length).toBeGreaterThanOrEqual(4);
	});

	it('forgets a model once its suite lets it go', async () => {
		router.unregister('model-a');
		const refused = await client.chat.completions.create(chat('model-a')).catch((error: unknown) => error);
		expect(refused).toBeInstanceOf(NotFoundError);
		router.register('model-a', a.url);
	});
});
