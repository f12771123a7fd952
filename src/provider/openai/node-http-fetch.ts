import http from 'node:http';
import https from 'node:https';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { ReadableStream as NodeReadableStream } from 'node:stream/web';

/*
 * A `fetch` for the provider's file uploads, over node:http. Node's own fetch (undici) clones every request body
 * for a possible redirect by teeing it, and the branch nobody reads keeps every chunk sent (nodejs/undici#4058,
 * open): the provider test's 120 MB upload held 130 MB until it ended (openai-provider.test.ts). node:http writes
 * the body as the socket drains and keeps nothing. Only uploads go through here; every other call keeps the SDK's
 * fetch. The provider's base URL is the administrator's setting, never a user's, so no address guard applies.
 */

type FetchInput = string | URL | { url: string };

/** The subset of `fetch` the OpenAI SDK calls: method, headers, a body (a stream, bytes or text) and a signal. */
export async function nodeHttpFetch(input: FetchInput, init: RequestInit = {}): Promise<Response> {
	const url = new URL(typeof input === 'string' || input instanceof URL ? input : input.url);
	const transport = url.protocol === 'https:' ? https : http;
	const method = (init.method ?? 'GET').toUpperCase();
	const headers: Record<string, string> = {};
	new Headers(init.headers).forEach((value, name) => {
		headers[name] = value;
	});
	init.signal?.throwIfAborted();

	return new Promise<Response>((resolve, reject) => {
		const request = transport.request(url, { method, headers, ...(init.signal ? { signal: init.signal } : {}) }, (response) => {
			const responseHeaders = new Headers();
			for (const [name, value] of Object.entries(response.headers)) {
				for (const item of Array.isArray(value) ? value : value === undefined ? [] : [value]) responseHeaders.append(name, item);
			}
			const status = response.statusCode ?? 502;
			const empty = method === 'HEAD' || status === 204 || status === 304;
			if (empty) response.resume();
			resolve(
				new Response(empty ? null : (Readable.toWeb(response) as ReadableStream<Uint8Array>), {
					status,
					statusText: response.statusMessage ?? '',
					headers: responseHeaders,
				}),
			);
		});
		request.on('error', reject);
		const body = init.body;
		if (body === undefined || body === null) {
			request.end();
		} else if (typeof body === 'string' || body instanceof Uint8Array) {
			request.end(body);
		} else if (body instanceof ReadableStream) {
			// pipeline waits for the socket to drain before it reads the next chunk; an error ends the request.
			pipeline(Readable.fromWeb(body as NodeReadableStream<Uint8Array>), request).catch((error: unknown) => {
				request.destroy(error instanceof Error ? error : new Error(String(error)));
				reject(error);
			});
		} else {
			request.destroy();
			reject(new TypeError(`nodeHttpFetch sends a stream, bytes or text, got ${Object.prototype.toString.call(body)}`));
		}
	});
}
