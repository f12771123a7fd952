import { once } from 'node:events';
import { createServer } from 'node:http';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import type { Logger } from '../../shared/logger.ts';
import { createOpenAiProvider } from './openai-provider.ts';
import type { OpenAiProviderOptions } from './openai-provider.ts';
import { ProviderCallError } from '../provider-call-error.ts';
import { createPacer } from '../pacing/pacer.ts';
import { createMemoryPacingStore } from '../pacing/pacing-store.ts';
import type { JsonCompletionRequest } from '../types.ts';

const API_KEY = 'sk-test-0123456789abcdefSECRET';

interface SeenRequest {
	method: string;
	url: string;
	headers: IncomingMessage['headers'];
	body: string;
}

type Handler = (req: SeenRequest, res: ServerResponse, index: number) => void | Promise<void>;

interface TestServer {
	baseURL: string;
	requests: SeenRequest[];
}

const servers: { close(): void }[] = [];

afterEach(() => {
	for (const server of servers.splice(0)) server.close();
});

/** A loopback server answering each request with the handler; it records what it saw. */
async function startServer(handler: Handler): Promise<TestServer> {
	const requests: SeenRequest[] = [];
	const server = createServer((req, res) => {
		const chunks: Buffer[] = [];
		req.on('data', (chunk: Buffer) => chunks.push(chunk));
		req.on('end', () => {
			const seen = { method: req.method ?? '', url: req.url ?? '', headers: req.headers, body: Buffer.concat(chunks).toString('utf8') };
			requests.push(seen);
			Promise.resolve(handler(seen, res, requests.length - 1)).catch((error: unknown) => {
				res.statusCode = 599;
				res.end(String(error));
			});
		});
	});
	server.listen(0, '127.0.0.1');
	await once(server, 'listening');
	servers.push({
		close: () => {
			server.closeAllConnections();
			server.close();
		},
	});
	const { port } = server.address() as AddressInfo;
	return { baseURL: `http://127.0.0.1:${port}/v1`, requests };
}

function json(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
	res.writeHead(status, { 'content-type': 'application/json', ...headers });
	res.end(JSON.stringify(body));
}

function completion(content: string | null, extra: { refusal?: string; finish_reason?: string } = {}) {
	return {
		id: 'chatcmpl-test',
		object: 'chat.completion',
		created: 1,
		model: 'test-model',
		choices: [
			{
				index: 0,
				message: { role: 'assistant', content, refusal: extra.refusal ?? null },
				finish_reason: extra.finish_reason ?? 'stop',
				logprobs: null,
			},
		],
		usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
	};
}

function errorBody(message: string, type = 'server_error') {
	return { error: { message, type, param: null, code: null } };
}

interface Recorder {
	logger: Logger;
	lines: { level: string; obj: object; msg?: string | undefined }[];
}

function recordingLogger(): Recorder {
	const lines: Recorder['lines'] = [];
	const at = (level: string) => (obj: object, msg?: string) => {
		lines.push({ level, obj, msg });
	};
	return { lines, logger: { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') } };
}

function provider(server: TestServer, overrides: Partial<OpenAiProviderOptions> = {}) {
	const sleeps: number[] = [];
	const log = recordingLogger();
	const instance = createOpenAiProvider({
		apiKey: API_KEY,
		baseURL: server.baseURL,
		model: 'test-model',
		timeoutMs: 5000,
		backoff: { baseMs: 100, maxMs: 1000 },
		logger: log.logger,
		sleep: async (ms) => {
			sleeps.push(ms);
		},
		...overrides,
	});
	return { instance, sleeps, log };
}

const schema = {
	type: 'object',
	properties: { answer: { type: 'string' } },
	required: ['answer'],
	additionalProperties: false,
};

function request(extra: Partial<JsonCompletionRequest> = {}): JsonCompletionRequest {
	return {
		schemaName: 'test_answer',
		schema,
		messages: [
			{ role: 'system', content: 'Answer in JSON.' },
			{ role: 'user', content: 'Say hi.' },
		],
		...extra,
	};
}

const GOOD = JSON.stringify({ answer: 'hi' });

async function callError(promise: Promise<unknown>): Promise<ProviderCallError> {
	const error = await promise.then(
		() => null,
		(e: unknown) => e,
	);
	expect(error).toBeInstanceOf(ProviderCallError);
	return error as ProviderCallError;
}

describe('createOpenAiProvider: completeJson', () => {
	it('sends a strict json_schema chat request with the model and bearer key, and returns the parsed object', async () => {
		const server = await startServer((_req, res) => json(res, 200, completion(GOOD)));
		const { instance, sleeps } = provider(server);

		await expect(instance.completeJson(request())).resolves.toEqual({ answer: 'hi' });

		expect(server.requests).toHaveLength(1);
		const seen = server.requests[0]!;
		expect(seen.method).toBe('POST');
		expect(seen.url).toBe('/v1/chat/completions');
		expect(seen.headers.authorization).toBe(`Bearer ${API_KEY}`);
		expect(JSON.parse(seen.body)).toEqual({
			model: 'test-model',
			messages: request().messages,
			response_format: { type: 'json_schema', json_schema: { name: 'test_answer', schema, strict: true } },
		});
		expect(sleeps).toEqual([]);
	});

	it('retries a 429 after the retry-after-ms the provider asks for, then succeeds', async () => {
		const server = await startServer((_req, res, i) =>
			i === 0 ? json(res, 429, errorBody('Rate limit reached', 'requests'), { 'retry-after-ms': '750' }) : json(res, 200, completion(GOOD)),
		);
		const { instance, sleeps, log } = provider(server);

		await expect(instance.completeJson(request({ logContext: { jobId: 7, route: '/a' } }))).resolves.toEqual({ answer: 'hi' });
		expect(server.requests).toHaveLength(2);
		expect(sleeps).toEqual([750]);
		const retryLine = log.lines.find((line) => line.level === 'warn');
		expect(retryLine?.obj).toMatchObject({ jobId: 7, route: '/a', reason: 'rate_limited', status: 429, attempt: 1, delayMs: 750 });
	});

	it('honours retry-after in seconds and caps it at maxRetryAfterMs', async () => {
		const server = await startServer((_req, res, i) => {
			if (i === 0) return json(res, 429, errorBody('slow down'), { 'retry-after': '2' });
			if (i === 1) return json(res, 429, errorBody('slow down'), { 'retry-after': '3600' });
			return json(res, 200, completion(GOOD));
		});
		const { instance, sleeps } = provider(server, { maxRetryAfterMs: 5000 });

		await expect(instance.completeJson(request())).resolves.toEqual({ answer: 'hi' });
		expect(sleeps).toEqual([2000, 5000]);
	});

	it('retries 5xx answers with growing, jittered, capped backoff, then succeeds', async () => {
		const server = await startServer((_req, res, i) =>
			i < 3 ? json(res, i === 0 ? 503 : 500, errorBody('The server had an error')) : json(res, 200, completion(GOOD)),
		);
		const { instance, sleeps } = provider(server, { backoff: { baseMs: 100, maxMs: 300 } });

		await expect(instance.completeJson(request())).resolves.toEqual({ answer: 'hi' });
		expect(server.requests).toHaveLength(4);
		expect(sleeps).toHaveLength(3);
		// Equal jitter: between half and all of 100, 200, then 400 capped to 300.
		expect(sleeps[0]).toBeGreaterThanOrEqual(50);
		expect(sleeps[0]).toBeLessThanOrEqual(100);
		expect(sleeps[1]).toBeGreaterThanOrEqual(100);
		expect(sleeps[1]).toBeLessThanOrEqual(200);
		expect(sleeps[2]).toBeGreaterThanOrEqual(150);
		expect(sleeps[2]).toBeLessThanOrEqual(300);
	});

	it('retries 408 and 409 answers', async () => {
		const server = await startServer((_req, res, i) =>
			i === 0 ? json(res, 408, errorBody('timeout')) : i === 1 ? json(res, 409, errorBody('lock')) : json(res, 200, completion(GOOD)),
		);
		const { instance } = provider(server);
		await expect(instance.completeJson(request())).resolves.toEqual({ answer: 'hi' });
		expect(server.requests).toHaveLength(3);
	});

	it('retries an attempt that exceeds timeoutMs, then succeeds', async () => {
		const server = await startServer((_req, res, i) => {
			if (i === 0) return; // never answers; the client's timeout must end the attempt
			json(res, 200, completion(GOOD));
		});
		const { instance, sleeps } = provider(server, { timeoutMs: 200 });

		const started = Date.now();
		await expect(instance.completeJson(request())).resolves.toEqual({ answer: 'hi' });
		expect(Date.now() - started).toBeLessThan(4000);
		expect(server.requests).toHaveLength(2);
		expect(sleeps).toHaveLength(1);
	});

	it('retries a connection that is dropped without an answer', async () => {
		const server = await startServer((_req, res, i) => {
			if (i === 0) {
				res.socket?.destroy();
				return;
			}
			json(res, 200, completion(GOOD));
		});
		const { instance } = provider(server);
		await expect(instance.completeJson(request())).resolves.toEqual({ answer: 'hi' });
		expect(server.requests).toHaveLength(2);
	});

	it('retries malformed JSON content, then succeeds', async () => {
		const server = await startServer((_req, res, i) => json(res, 200, completion(i === 0 ? '{"answer": "hi"' : GOOD)));
		const { instance, log } = provider(server);
		await expect(instance.completeJson(request())).resolves.toEqual({ answer: 'hi' });
		expect(server.requests).toHaveLength(2);
		expect(log.lines[0]?.obj).toMatchObject({ reason: 'malformed_output' });
	});

	it('reports the usage of every answer, the unusable one it retried included, and none for an error status', async () => {
		const server = await startServer((_req, res, i) => {
			if (i === 0) return json(res, 503, errorBody('busy'));
			json(res, 200, { ...completion(i === 1 ? '{"answer": "hi"' : GOOD), usage: { prompt_tokens: 100 + i, completion_tokens: 10 * i, total_tokens: 0 } });
		});
		const { instance } = provider(server);
		const reported: unknown[] = [];
		await expect(instance.completeJson({ ...request(), onUsage: (usage) => reported.push(usage) })).resolves.toEqual({ answer: 'hi' });
		expect(server.requests).toHaveLength(3);
		expect(reported).toEqual([
			{ prompt_tokens: 101, completion_tokens: 10 },
			{ prompt_tokens: 102, completion_tokens: 20 },
		]);
	});

	it('retries a refusal and a length-truncated answer, then succeeds', async () => {
		const server = await startServer((_req, res, i) => {
			if (i === 0) return json(res, 200, completion(null, { refusal: 'I cannot help with that.' }));
			if (i === 1) return json(res, 200, completion('{"answer": "h', { finish_reason: 'length' }));
			json(res, 200, completion(GOOD));
		});
		const { instance, log } = provider(server);
		await expect(instance.completeJson(request())).resolves.toEqual({ answer: 'hi' });
		expect(log.lines.map((line) => (line.obj as { reason?: string }).reason)).toEqual(['refusal', 'truncated']);
	});

	it('ends with a refusal error carrying the refusal text when the model keeps refusing', async () => {
		const server = await startServer((_req, res) => json(res, 200, completion(null, { refusal: 'I cannot help with that.' })));
		const { instance } = provider(server, { maxAttempts: 2 });
		const error = await callError(instance.completeJson(request()));
		expect(error.reason).toBe('refusal');
		expect(error.message).toBe('Provider refused the request after 2 attempts: I cannot help with that.');
	});

	it('retries an output the validate hook rejects, and returns the first accepted one', async () => {
		const server = await startServer((_req, res, i) => json(res, 200, completion(JSON.stringify({ answer: i === 0 ? '' : 'hello' }))));
		const { instance } = provider(server);
		const seen: unknown[] = [];
		const result = await instance.completeJson(
			request({
				validate: (value) => {
					seen.push(value);
					return (value as { answer: string }).answer === '' ? 'answer is empty' : null;
				},
			}),
		);
		expect(result).toEqual({ answer: 'hello' });
		expect(seen).toEqual([{ answer: '' }, { answer: 'hello' }]);
	});

	it('throws a clean ProviderCallError once attempts are exhausted', async () => {
		const server = await startServer((_req, res) => json(res, 500, errorBody(`The server had an error (key ${API_KEY})`)));
		const { instance, sleeps, log } = provider(server, { maxAttempts: 3 });

		const error = await callError(instance.completeJson(request()));
		expect(server.requests).toHaveLength(3);
		expect(sleeps).toHaveLength(2);
		expect(error.name).toBe('ProviderCallError');
		expect(error.reason).toBe('server_error');
		expect(error.retryable).toBe(true);
		expect(error.status).toBe(500);
		expect(error.attempts).toBe(3);
		expect(error.message).toBe('Provider server error (HTTP 500) after 3 attempts: The server had an error (key [redacted])');
		expect(error.message).not.toContain('\n');
		expect(JSON.stringify(log.lines)).not.toContain(API_KEY);
	});

	it('names the validator message when every output is rejected', async () => {
		const server = await startServer((_req, res) => json(res, 200, completion(GOOD)));
		const { instance } = provider(server, { maxAttempts: 2 });
		const error = await callError(instance.completeJson(request({ validate: () => 'meta_description is too short' })));
		expect(error.reason).toBe('invalid_output');
		expect(error.message).toBe('Provider output failed validation after 2 attempts: meta_description is too short');
	});

	it('fails a 400 at once, without retrying', async () => {
		const server = await startServer((_req, res) => json(res, 400, errorBody("Invalid schema for response_format 'test_answer'", 'invalid_request_error')));
		const { instance, sleeps } = provider(server);
		const error = await callError(instance.completeJson(request()));
		expect(server.requests).toHaveLength(1);
		expect(sleeps).toEqual([]);
		expect(error.reason).toBe('bad_request');
		expect(error.retryable).toBe(false);
		expect(error.status).toBe(400);
		expect(error.message).toBe("Provider rejected the request (HTTP 400): Invalid schema for response_format 'test_answer'");
	});

	it.each([
		[401, 'unauthorized', 'Provider rejected the API key (HTTP 401)'],
		[403, 'forbidden', 'Provider denied access (HTTP 403): nope'],
		[404, 'not_found', 'Provider does not know this model or endpoint (HTTP 404): nope'],
	])('fails a %i at once and keeps secrets out of the message', async (status, reason, message) => {
		const server = await startServer((_req, res) =>
			json(res, status, errorBody(status === 401 ? `Incorrect API key provided: ${API_KEY.slice(0, 8)}****CRET` : 'nope')),
		);
		const { instance } = provider(server);
		const error = await callError(instance.completeJson(request()));
		expect(server.requests).toHaveLength(1);
		expect(error.reason).toBe(reason);
		expect(error.message).toBe(message);
	});

	it('fails at once with "OPENAI_API_KEY is not set" and no request when the key is missing', async () => {
		const server = await startServer((_req, res) => json(res, 200, completion(GOOD)));
		for (const apiKey of [undefined, '', '  ']) {
			const { instance } = provider(server, { apiKey });
			const error = await callError(instance.completeJson(request()));
			expect(error.message).toBe('OPENAI_API_KEY is not set');
			expect(error.reason).toBe('missing_api_key');
			expect(error.retryable).toBe(false);
			await expect(instance.retrieveBatch('batch_1')).rejects.toThrow('OPENAI_API_KEY is not set');
			await expect(instance.uploadBatchFile(['{}'], 'in.jsonl')).rejects.toThrow('OPENAI_API_KEY is not set');
			await expect(instance.createBatch('file_1', {})).rejects.toThrow('OPENAI_API_KEY is not set');
			await expect(instance.findBatchByMetadata('job', '1')).rejects.toThrow('OPENAI_API_KEY is not set');
			const lines = instance.streamFileLines('file_1')[Symbol.asyncIterator]();
			await expect(lines.next()).rejects.toThrow('OPENAI_API_KEY is not set');
		}
		expect(server.requests).toHaveLength(0);
	});

	it('stops retrying when the request signal aborts during a backoff', async () => {
		const server = await startServer((_req, res) => json(res, 503, errorBody('busy')));
		const controller = new AbortController();
		const { instance } = provider(server, {
			sleep: async () => {
				controller.abort();
				throw new Error('aborted');
			},
		});
		const error = await callError(instance.completeJson(request({ signal: controller.signal })));
		expect(error.reason).toBe('aborted');
		expect(server.requests).toHaveLength(1);
	});

	it('rejects bad options with a TypeError naming the value', () => {
		const base = { apiKey: API_KEY, model: 'm', logger: recordingLogger().logger };
		expect(() => createOpenAiProvider({ ...base, maxAttempts: 0 })).toThrow(new TypeError('Expected `maxAttempts` to be an integer >= 1, got `0` (number)'));
		expect(() => createOpenAiProvider({ ...base, model: '' })).toThrow(TypeError);
		expect(() => createOpenAiProvider({ ...base, baseURL: 'ftp://x' })).toThrow('Expected `baseURL` to be an http(s) URL, got `ftp://x`');
		expect(() => createOpenAiProvider({ ...base, backoff: { baseMs: 10, maxMs: 5 } })).toThrow(/backoff.maxMs/);
		expect(() => createOpenAiProvider({ ...base, timeoutMs: 1.5 })).toThrow(/timeoutMs/);
	});

	it('rejects a request with a bad schema name before any call', async () => {
		const server = await startServer((_req, res) => json(res, 200, completion(GOOD)));
		const { instance } = provider(server);
		await expect(instance.completeJson(request({ schemaName: 'has space' }))).rejects.toThrow(TypeError);
		expect(server.requests).toHaveLength(0);
	});
});

function batchObject(id: string, metadata: Record<string, string> | null, extra: Record<string, unknown> = {}) {
	return {
		id,
		object: 'batch',
		endpoint: '/v1/chat/completions',
		input_file_id: 'file-in',
		completion_window: '24h',
		status: 'in_progress',
		created_at: 1700000000,
		request_counts: { total: 3, completed: 1, failed: 0 },
		metadata,
		...extra,
	};
}

describe('createOpenAiProvider: batch operations', () => {
	it('buildBatchLine writes one JSONL line with the same body as a direct call', async () => {
		const server = await startServer((_req, res) => json(res, 200, completion(GOOD)));
		const { instance } = provider(server);
		const line = instance.buildBatchLine('/pricing', request());
		expect(line).not.toContain('\n');
		await instance.completeJson(request());
		expect(JSON.parse(line)).toEqual({
			custom_id: '/pricing',
			method: 'POST',
			url: '/v1/chat/completions',
			body: JSON.parse(server.requests[0]!.body),
		});
		expect(() => instance.buildBatchLine('', request())).toThrow(TypeError);
	});

	it('uploadBatchFile sends the lines as a JSONL file with purpose batch and returns the file id', async () => {
		const server = await startServer((_req, res) => json(res, 200, { id: 'file-abc', object: 'file', bytes: 10, created_at: 1, filename: 'in.jsonl', purpose: 'batch' }));
		const { instance } = provider(server);

		async function* lines() {
			yield '{"custom_id":"a"}';
			yield '{"custom_id":"b"}';
		}
		await expect(instance.uploadBatchFile(lines(), 'job-1.jsonl')).resolves.toBe('file-abc');
		await expect(instance.uploadBatchFile(['{"custom_id":"c"}'], 'job-2.jsonl')).resolves.toBe('file-abc');

		const [first, second] = server.requests;
		expect(first?.url).toBe('/v1/files');
		expect(first?.headers['content-type']).toMatch(/^multipart\/form-data/);
		expect(first?.body).toMatch(/name="purpose"\r\n\r\nbatch\r\n/);
		expect(first?.body).toContain('filename="job-1.jsonl"');
		expect(first?.body).toContain('{"custom_id":"a"}\n{"custom_id":"b"}\n');
		expect(second?.body).toContain('{"custom_id":"c"}\n');
	});

	it('uploadBatchFile sends every byte of a 3.5 MB file through its spool file and the upload, multi-byte characters and a 1.5 MB line included', async () => {
		const server = await startServer((_req, res) => json(res, 200, { id: 'file-big', object: 'file', bytes: 1, created_at: 1, filename: 'big.jsonl', purpose: 'batch' }));
		const { instance } = provider(server);
		// About 3.5 MB, larger than any read or write chunk on the way: lines with a three-byte character, one line of 1.5 MB.
		const sent = Array.from({ length: 300 }, (_, i) => JSON.stringify({ custom_id: `/p-${i}`, text: `€${'x'.repeat(6000 + i)}€` }));
		sent.splice(150, 0, JSON.stringify({ custom_id: '/long', text: 'y'.repeat(1_500_000) }));
		await expect(instance.uploadBatchFile(sent, 'big.jsonl')).resolves.toBe('file-big');
		const body = server.requests[0]!.body;
		expect(body).toContain(`filename="big.jsonl"`);
		expect(body).toContain(`\r\n\r\n${sent.join('\n')}\n\r\n`);
	});

	it('uploadBatchFile sends a 120 MB file without holding it in memory', async () => {
		let received = 0;
		// Its own server, which counts the bytes and drops them, so that the server's side holds nothing either.
		const raw = createServer((req, res) => {
			req.on('data', (chunk: Buffer) => (received += chunk.length));
			req.on('end', () => json(res, 200, { id: 'file-huge', object: 'file', bytes: received, created_at: 1, filename: 'huge.jsonl', purpose: 'batch' }));
		});
		raw.listen(0, '127.0.0.1');
		await once(raw, 'listening');
		servers.push({ close: () => raw.close() });
		const { instance } = provider({ baseURL: `http://127.0.0.1:${(raw.address() as AddressInfo).port}/v1`, requests: [] });
		const line = JSON.stringify({ custom_id: '/p', text: 'z'.repeat(4000) });
		async function* lines() {
			for (let i = 0; i < 30_000; i++) yield line;
		}
		const before = process.memoryUsage().arrayBuffers;
		let peak = before;
		const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().arrayBuffers)), 5);
		try {
			await expect(instance.uploadBatchFile(lines(), 'huge.jsonl')).resolves.toBe('file-huge');
		} finally {
			clearInterval(sampler);
		}
		expect(received).toBeGreaterThan(120_000_000);
		// Node's fetch kept every chunk it sent until the request ended (nodejs/undici#4058): 120 MB here. The figure is
		// the process's, which other test files running beside this one add to (41.5 MB was seen on a loaded machine):
		// half of 120 MB tells the two apart.
		expect(peak - before).toBeLessThan(60_000_000);
	});

	it('uploadBatchFile refuses lines with line breaks and empty input before sending', async () => {
		const server = await startServer((_req, res) => json(res, 200, { id: 'file-abc' }));
		const { instance } = provider(server);
		await expect(instance.uploadBatchFile(['{"a":1}', '{"b":\n2}'], 'x.jsonl')).rejects.toThrow(/line 1/);
		await expect(instance.uploadBatchFile([], 'x.jsonl')).rejects.toThrow(TypeError);
		expect(server.requests).toHaveLength(0);
	});

	it('sends the extra headers an OpenAI-compatible server asks for with every request, and keeps their values out of errors', async () => {
		const server = await startServer((_req, res) => json(res, 401, { error: { message: 'bad gateway token gw-secret-7 for this project', type: 'invalid_request_error' } }));
		const { instance } = provider(server, { headers: { 'X-Gateway-Token': 'gw-secret-7' } });
		const failure = await instance.createBatch('file-in', {}).catch((error: unknown) => error as Error);
		expect(server.requests[0]!.headers['x-gateway-token']).toBe('gw-secret-7');
		expect(String(failure)).not.toContain('gw-secret-7');
	});

	it('createBatch posts a 24h chat batch with metadata and maps the answer', async () => {
		const server = await startServer((_req, res) => json(res, 200, batchObject('batch_1', { job_id: '42' }, { status: 'validating' })));
		const { instance } = provider(server);

		const info = await instance.createBatch('file-in', { job_id: '42' });
		expect(JSON.parse(server.requests[0]!.body)).toEqual({
			input_file_id: 'file-in',
			endpoint: '/v1/chat/completions',
			completion_window: '24h',
			metadata: { job_id: '42' },
		});
		expect(info).toEqual({
			id: 'batch_1',
			status: 'validating',
			inputFileId: 'file-in',
			outputFileId: null,
			errorFileId: null,
			requestCounts: { total: 3, completed: 1, failed: 0 },
			metadata: { job_id: '42' },
			errors: [],
			createdAt: 1700000000,
		});
	});

	it('createBatch and uploadBatchFile are not repeated after a 5xx or a timeout, which may have created them', async () => {
		const server = await startServer((req, res) => {
			if (req.url === '/v1/batches') return json(res, 500, errorBody('oops'));
			// uploads hang past the timeout
		});
		const { instance, sleeps } = provider(server, { timeoutMs: 200 });
		const created = await callError(instance.createBatch('file-in', { job_id: '1' }));
		expect(created.reason).toBe('server_error');
		expect(created.retryable).toBe(true);
		const uploaded = await callError(instance.uploadBatchFile(['{}'], 'in.jsonl'));
		expect(uploaded.reason).toBe('timeout');
		expect(server.requests.map((r) => r.url)).toEqual(['/v1/batches', '/v1/files']);
		expect(sleeps).toEqual([]);
	});

	it('createBatch is not repeated after a 429: the rate-limited error goes to the engine, which waits between its steps', async () => {
		const server = await startServer((_req, res, i) =>
			i === 0 ? json(res, 429, errorBody('too many batches'), { 'retry-after-ms': '10' }) : json(res, 200, batchObject('batch_2', { job_id: '1' })),
		);
		const { instance, sleeps } = provider(server);
		await expect(instance.createBatch('file-in', { job_id: '1' })).rejects.toMatchObject({ reason: 'rate_limited', status: 429 });
		expect(sleeps).toEqual([]);
		expect(server.requests).toHaveLength(1);
	});

	it('createBatch refuses metadata the Batch API would reject', async () => {
		const server = await startServer((_req, res) => json(res, 200, {}));
		const { instance } = provider(server);
		const many = Object.fromEntries(Array.from({ length: 17 }, (_, i) => [`k${i}`, 'v']));
		await expect(instance.createBatch('file-in', many)).rejects.toThrow('at most 16 pairs');
		await expect(instance.createBatch('file-in', { job: 'x'.repeat(513) })).rejects.toThrow(TypeError);
		expect(server.requests).toHaveLength(0);
	});

	it('findBatchByMetadata walks list pages newest first and returns the first match', async () => {
		const pages: Record<string, { data: unknown[]; has_more: boolean }> = {
			start: { data: [batchObject('b9', { job_id: '1' }), batchObject('b8', null)], has_more: true },
			b8: { data: [batchObject('b7', { job_id: '42' }, { status: 'completed', output_file_id: 'file-out' }), batchObject('b6', { job_id: '42' })], has_more: true },
			b6: { data: [batchObject('b5', { job_id: '5' })], has_more: false },
		};
		const server = await startServer((req, res) => {
			const after = new URL(req.url, 'http://x').searchParams.get('after') ?? 'start';
			json(res, 200, { object: 'list', ...pages[after] });
		});
		const { instance } = provider(server);

		const found = await instance.findBatchByMetadata('job_id', '42');
		expect(found).toMatchObject({ id: 'b7', status: 'completed', outputFileId: 'file-out', metadata: { job_id: '42' } });
		expect(server.requests.map((r) => new URL(r.url, 'http://x').searchParams.get('after'))).toEqual([null, 'b8']);

		await expect(instance.findBatchByMetadata('job_id', 'nope')).resolves.toBeNull();
		expect(server.requests).toHaveLength(5);
	});

	it('findBatchByMetadata stops after maxBatchScan batches', async () => {
		let served = 0;
		const server = await startServer((req, res) => {
			const limit = Number(new URL(req.url, 'http://x').searchParams.get('limit'));
			const data = Array.from({ length: limit }, () => batchObject(`b${++served}`, { job_id: 'other' }));
			json(res, 200, { object: 'list', data, has_more: true });
		});
		const { instance } = provider(server, { maxBatchScan: 250 });
		await expect(instance.findBatchByMetadata('job_id', '1')).resolves.toBeNull();
		expect(served).toBe(250);
		expect(server.requests).toHaveLength(3);
	});

	it('retrieveBatch is retried on transient errors and maps a failed batch with its errors', async () => {
		const server = await startServer((req, res, i) => {
			if (i === 0) return json(res, 503, errorBody('busy'));
			json(
				res,
				200,
				batchObject('batch_9', { job_id: '3' }, {
					status: 'failed',
					errors: { object: 'list', data: [{ code: 'invalid_json_line', line: 2, message: 'Line 2 is not valid JSON.', param: null }] },
					error_file_id: 'file-err',
				}),
			);
		});
		const { instance } = provider(server);
		const info = await instance.retrieveBatch('batch_9');
		expect(server.requests.map((r) => r.url)).toEqual(['/v1/batches/batch_9', '/v1/batches/batch_9']);
		expect(info).toMatchObject({
			id: 'batch_9',
			status: 'failed',
			errorFileId: 'file-err',
			errors: [{ code: 'invalid_json_line', line: 2, message: 'Line 2 is not valid JSON.' }],
		});
	});

	it('cancelBatch posts to the batch\'s cancel path and maps the state it answers', async () => {
		const server = await startServer((req, res) => {
			json(res, 200, batchObject('batch_7', { job_id: '4' }, { status: 'cancelling' }));
		});
		const { instance } = provider(server);
		const info = await instance.cancelBatch('batch_7');
		expect(server.requests.map((r) => [r.method, r.url])).toEqual([['POST', '/v1/batches/batch_7/cancel']]);
		expect(info).toMatchObject({ id: 'batch_7', status: 'cancelling' });
	});

	it('deleteFile deletes the file, and takes a file the provider no longer has as deleted', async () => {
		const server = await startServer((req, res) => {
			if (req.url === '/v1/files/file-gone') return json(res, 404, { error: { message: 'No such File object: file-gone', type: 'invalid_request_error', code: null } });
			json(res, 200, { id: 'file-out', object: 'file', deleted: true });
		});
		const { instance } = provider(server);
		await instance.deleteFile('file-out');
		await instance.deleteFile('file-gone');
		expect(server.requests.map((r) => [r.method, r.url])).toEqual([
			['DELETE', '/v1/files/file-out'],
			['DELETE', '/v1/files/file-gone'],
		]);
	});

	it('deleteFile fails on a refusal other than 404', async () => {
		const server = await startServer((_req, res) => json(res, 403, { error: { message: 'forbidden', type: 'invalid_request_error', code: null } }));
		const { instance } = provider(server);
		await expect(instance.deleteFile('file-out')).rejects.toMatchObject({ status: 403 });
	});

	it('streamFileLines yields lines while the file is still arriving', { timeout: 5000 }, async () => {
		let releaseRest!: () => void;
		const rest = new Promise<void>((resolve) => {
			releaseRest = resolve;
		});
		const server = await startServer(async (req, res) => {
			expect(req.url).toBe('/v1/files/file-out/content');
			res.writeHead(200, { 'content-type': 'application/octet-stream' });
			res.write('{"n":1}\r\n{"n":2}\n');
			await rest; // the rest is only sent once the client has seen the first lines
			res.end('\n{"n":3}');
		});
		const { instance } = provider(server);
		const seen: string[] = [];
		for await (const line of instance.streamFileLines('file-out')) {
			seen.push(line);
			if (seen.length === 2) releaseRest();
		}
		expect(seen).toEqual(['{"n":1}', '{"n":2}', '{"n":3}']);
	});

	it('streamFileLines reads a 10,000-line output file without memory proportional to its size', async () => {
		const LINES = 10_000;
		const filler = 'x'.repeat(6000);
		const server = await startServer(async (_req, res) => {
			res.writeHead(200, { 'content-type': 'application/octet-stream' });
			for (let i = 0; i < LINES; i++) {
				const line = `${JSON.stringify({ custom_id: `/page-${i}`, response: { status_code: 200, body: { filler } } })}\n`;
				if (!res.write(line)) await once(res, 'drain');
			}
			res.end();
		});
		const { instance } = provider(server);

		const before = process.memoryUsage().heapUsed;
		let peak = before;
		let count = 0;
		let bytes = 0;
		for await (const line of instance.streamFileLines('file-big')) {
			if (count === 0 || count === LINES - 1) expect(JSON.parse(line).custom_id).toBe(`/page-${count}`);
			count++;
			bytes += line.length;
			if (count % 250 === 0) peak = Math.max(peak, process.memoryUsage().heapUsed);
		}
		expect(count).toBe(LINES);
		expect(bytes).toBeGreaterThan(60_000_000);
		// 60 MB went through; a reader that buffered the body would hold all of it (twice, as bytes and text).
		expect(peak - before).toBeLessThan(40_000_000);
	});

	it('streamFileLines cancels the download when the consumer stops early', async () => {
		let closed = false;
		const server = await startServer(async (_req, res) => {
			res.writeHead(200, { 'content-type': 'application/octet-stream' });
			res.on('close', () => {
				closed = true;
			});
			for (let i = 0; i < 1_000_000 && !closed; i++) {
				if (!res.write(`{"n":${i}}\n`)) await Promise.race([once(res, 'drain'), once(res, 'close')]);
			}
			res.end();
		});
		const { instance } = provider(server);
		for await (const line of instance.streamFileLines('file-big')) {
			if (line === '{"n":5}') break;
		}
		await expect.poll(() => closed, { timeout: 3000 }).toBe(true);
	});

	it('streamFileLines fails a missing file with a not-found error', async () => {
		const server = await startServer((_req, res) => json(res, 404, errorBody('No such File object: file-x', 'invalid_request_error')));
		const { instance } = provider(server);
		const iterator = instance.streamFileLines('file-x')[Symbol.asyncIterator]();
		const error = await callError(iterator.next());
		expect(error.reason).toBe('not_found');
		expect(server.requests).toHaveLength(1);
	});
});

describe('createOpenAiProvider: pacing', () => {
	/** A pacer on a clock that its sleeps move on, as the provider's sleeps do. */
	function paced(server: TestServer) {
		const clock = { now: 1_700_000_000_000 };
		const sleeps: number[] = [];
		const sleep = async (ms: number) => {
			sleeps.push(ms);
			clock.now += ms;
		};
		const log = recordingLogger();
		const pacer = createPacer({ key: 'openai:unit', provider: 'openai', configured: { requestsPerMinute: null, tokensPerMinute: null }, store: createMemoryPacingStore(), logger: log.logger, sleep, now: () => clock.now });
		const { instance } = provider(server, { pacer, sleep });
		return { instance, sleeps, clock };
	}

	it('learns the key\'s limit from the headers of a successful answer, and paces the next calls to it', async () => {
		const server = await startServer((_req, res) =>
			json(res, 200, completion(GOOD), { 'x-ratelimit-limit-requests': '2', 'x-ratelimit-remaining-requests': '1', 'x-ratelimit-reset-requests': '500ms' }),
		);
		const { instance, clock } = paced(server);
		const times: number[] = [];
		const start = clock.now;
		for (let i = 0; i < 4; i++) {
			await instance.completeJson(request());
			times.push(clock.now - start);
		}
		// Two a second (one in use, whole again in 500 ms): after the first answer, a burst of 0.9 s of it, then 500 ms apart.
		expect(times).toEqual([0, 0, 100, 600]);
	});

	it('retries a 429 as long as it waits within rateWaitMs, not maxAttempts times', async () => {
		const server = await startServer((_req, res, i) =>
			i < 6 ? json(res, 429, errorBody('Rate limit reached', 'requests'), { 'retry-after-ms': '100' }) : json(res, 200, completion(GOOD)),
		);
		const { instance } = provider(server, { maxAttempts: 2 });
		await expect(instance.completeJson(request())).resolves.toEqual({ answer: 'hi' });
		expect(server.requests).toHaveLength(7);
	});

	it('fails with a retryable rate_limited error once rateWaitMs is spent', async () => {
		const server = await startServer((_req, res) => json(res, 429, errorBody('Rate limit reached', 'requests'), { 'retry-after-ms': '400' }));
		const { instance } = provider(server, { rateWaitMs: 1000 });
		const error = await callError(instance.completeJson(request()));
		expect(error).toMatchObject({ reason: 'rate_limited', retryable: true, status: 429, attempts: 3 });
		expect(error.message).toContain('PSEO_PROVIDER_RATE_WAIT_MS');
	});

	it('fails at once, not retried, when a 429 says the quota is spent', async () => {
		const server = await startServer((_req, res) =>
			json(res, 429, { error: { message: 'You exceeded your current quota, please check your plan and billing details.', type: 'insufficient_quota', param: null, code: 'insufficient_quota' } }),
		);
		const { instance } = provider(server);
		const error = await callError(instance.completeJson(request()));
		expect(error).toMatchObject({ reason: 'quota_exhausted', retryable: false, status: 429, attempts: 1 });
		expect(server.requests).toHaveLength(1);
	});
});
