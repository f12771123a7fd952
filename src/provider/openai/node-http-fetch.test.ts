import http from 'node:http';
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { nodeHttpFetch } from './node-http-fetch.ts';

const servers: http.Server[] = [];
afterEach(async () => {
	await Promise.all(servers.splice(0).map((server) => new Promise((resolve) => server.close(resolve))));
});

async function serve(handler: http.RequestListener): Promise<string> {
	const server = http.createServer(handler);
	servers.push(server);
	server.listen(0, '127.0.0.1');
	await once(server, 'listening');
	return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

/** A request body as a web stream of `count` chunks of `size` bytes, counting the chunks pulled from it. */
function chunkStream(count: number, size: number, pulled: { chunks: number }): ReadableStream<Uint8Array> {
	return new ReadableStream({
		pull(controller) {
			if (pulled.chunks === count) return controller.close();
			pulled.chunks++;
			controller.enqueue(new Uint8Array(size).fill(97));
		},
	});
}

describe('nodeHttpFetch', () => {
	it('sends method, headers and a text body, and answers status, headers and body like fetch', async () => {
		const url = await serve((req, res) => {
			let body = '';
			req.setEncoding('utf8');
			req.on('data', (chunk: string) => (body += chunk));
			req.on('end', () => {
				res.setHeader('content-type', 'application/json');
				res.setHeader('x-request-id', 'req-1');
				res.statusCode = 201;
				res.end(JSON.stringify({ method: req.method, auth: req.headers.authorization, body }));
			});
		});
		const response = await nodeHttpFetch(`${url}/v1/files`, { method: 'post', headers: new Headers({ authorization: 'Bearer k' }), body: 'hello' });
		expect(response.status).toBe(201);
		expect(response.headers.get('x-request-id')).toBe('req-1');
		expect(await response.json()).toEqual({ method: 'POST', auth: 'Bearer k', body: 'hello' });
	});

	it('reads a stream body only as fast as the server takes it', async () => {
		const pulled = { chunks: 0 };
		let received = 0;
		let lead = 0;
		const url = await serve((req, res) => {
			// A slow reader: a turn of the event loop between chunks. At each chunk, how far the client's reading of
			// the body has run ahead of what arrived; a client that ignored backpressure would pull all 64 MB at once.
			req.on('data', (chunk: Buffer) => {
				received += chunk.length;
				lead = Math.max(lead, pulled.chunks * 64 * 1024 - received);
				req.pause();
				setImmediate(() => req.resume());
			});
			req.on('end', () => res.end('done'));
		});
		const response = await nodeHttpFetch(url, { method: 'POST', body: chunkStream(1024, 64 * 1024, pulled), duplex: 'half' } as RequestInit);
		expect(await response.text()).toBe('done');
		expect(received).toBe(64 * 1024 * 1024);
		expect(pulled.chunks).toBe(1024);
		// What the sockets buffer on loopback, a few megabytes, and nothing near the 64 MB offered.
		expect(lead).toBeLessThan(16 * 1024 * 1024);
	});

	it('rejects when the signal aborts, and answers an empty body for 204', async () => {
		const controller = new AbortController();
		const url = await serve((req, res) => {
			if (req.url === '/empty') {
				res.statusCode = 204;
				res.end();
				return;
			}
			// Any other request is never answered: the caller gives up once the server has it.
			controller.abort();
		});
		const empty = await nodeHttpFetch(`${url}/empty`);
		expect(empty.status).toBe(204);
		expect(empty.body).toBeNull();
		await expect(nodeHttpFetch(`${url}/hang`, { signal: controller.signal })).rejects.toThrow(/abort/i);
	});
});
