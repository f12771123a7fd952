import http from 'node:http';
import https from 'node:https';
import { lookup as dnsLookup } from 'node:dns';
import type { IncomingMessage } from 'node:http';
import type { LookupFunction } from 'node:net';
import { isIpLiteral, refusedAddressReason, stripBrackets, type AddressPolicy } from '../sitemap/address-policy.ts';
import { BLOCKED_ADDRESS_CODE, guardLookup } from '../sitemap/guarded-fetch.ts';
import { backoffDelay, defaultSleep, retryAfterMs, type Sleep } from '../provider/backoff.ts';

/*
 * Requests to a user's website (WordPress, a webhook receiver) go through the same SSRF guard as the sitemap
 * reader: the address is checked at connect time on the address actually dialled (so DNS rebinding cannot slip
 * between a check and the connection), IP literals before the request, and again on every redirect hop. Unlike
 * the sitemap fetcher this client sends bodies and reads small JSON answers, and retries what a site under load
 * answers (429, 5xx, a dropped connection) with backoff, where the site's `retry-after` wins.
 */

type OutboundMethod = 'GET' | 'POST' | 'PUT' | 'DELETE' | 'OPTIONS';

interface OutboundRequest {
	method: OutboundMethod;
	url: string;
	headers?: Record<string, string>;
	body?: string;
	/** False: one attempt, the caller retries (a webhook retries every non-2xx answer, not only 429 and 5xx). */
	retry?: boolean;
}

export interface OutboundResponse {
	status: number;
	headers: Headers;
	/** The body as text (capped). */
	text: string;
	/** The URL that answered, after redirects. */
	url: string;
}

export type OutboundFailureKind = 'invalid-url' | 'blocked' | 'redirect' | 'timeout' | 'network' | 'too-large';

/** The request never got an HTTP answer: refused by the guard, timed out, or the connection failed. */
export class OutboundError extends Error {
	readonly kind: OutboundFailureKind;
	constructor(kind: OutboundFailureKind, message: string) {
		super(message);
		this.name = 'OutboundError';
		this.kind = kind;
	}
}

export interface OutboundOptions extends AddressPolicy {
	userAgent: string;
	timeoutMs: number;
	/** Attempts per request when the answer is 429, 5xx or no answer at all. */
	maxAttempts: number;
	backoffBaseMs: number;
	/** Most bytes of an answer kept. */
	maxBytes?: number;
	maxRedirects?: number;
	lookup?: LookupFunction;
	sleep?: Sleep;
}

export interface OutboundClient {
	/** One request with retries; an HTTP answer of any status resolves, no answer rejects with OutboundError. */
	send(request: OutboundRequest, signal?: AbortSignal): Promise<OutboundResponse>;
	close(): void;
}

const REDIRECTS = new Set([301, 302, 303, 307, 308]);
/** The longest wait a `retry-after` may impose on one attempt. */
const RETRY_AFTER_CAP_MS = 120_000;

export function createOutboundClient(options: OutboundOptions): OutboundClient {
	const policy: AddressPolicy = { allowPrivateNetworks: options.allowPrivateNetworks, allowedHosts: options.allowedHosts?.map((host) => host.toLowerCase()) };
	const lookup = guardLookup(options.lookup ?? (dnsLookup as unknown as LookupFunction), policy);
	const agentOptions = { keepAlive: true, maxSockets: 4, lookup };
	const httpAgent = new http.Agent(agentOptions);
	const httpsAgent = new https.Agent(agentOptions);
	const maxBytes = options.maxBytes ?? 4 * 1024 * 1024;
	const maxRedirects = options.maxRedirects ?? 5;
	const sleep = options.sleep ?? defaultSleep;

	async function once(request: OutboundRequest, signal?: AbortSignal): Promise<OutboundResponse> {
		const deadline = AbortSignal.timeout(options.timeoutMs);
		const combined = signal ? AbortSignal.any([deadline, signal]) : deadline;
		let url: URL;
		try {
			url = new URL(request.url);
		} catch {
			throw new OutboundError('invalid-url', `not a valid URL: ${request.url}`);
		}
		const method = request.method;
		let body = request.body;
		for (let hop = 0; ; hop++) {
			if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new OutboundError('invalid-url', `scheme ${url.protocol} is not http(s)`);
			if (isIpLiteral(url.hostname)) {
				const reason = refusedAddressReason(url.hostname, url.hostname, policy);
				if (reason) throw new OutboundError('blocked', `refused ${stripBrackets(url.hostname)}: ${reason}`);
			}
			let response: IncomingMessage;
			try {
				response = await dial(url, method, request.headers ?? {}, body, combined);
			} catch (error) {
				throw classify(error, deadline);
			}
			const status = response.statusCode ?? 0;
			if (REDIRECTS.has(status) && response.headers.location !== undefined) {
				response.resume();
				if (hop >= maxRedirects) throw new OutboundError('redirect', `more than ${maxRedirects} redirects`);
				const keepsMethod = status === 307 || status === 308;
				// A 301/302/303 turns a write into a GET, which would silently drop the post: refuse it instead.
				if (!keepsMethod && method !== 'GET' && method !== 'OPTIONS') {
					throw new OutboundError('redirect', `the site redirected a ${method} to ${response.headers.location}; use the final address of the site`);
				}
				url = new URL(response.headers.location, url);
				if (!keepsMethod) body = undefined;
				continue;
			}
			const text = await readText(response, maxBytes, combined).catch((error: unknown) => {
				throw error instanceof OutboundError ? error : classify(error, deadline);
			});
			const headers = new Headers();
			for (const [name, value] of Object.entries(response.headers)) {
				if (value !== undefined) headers.set(name, Array.isArray(value) ? value.join(', ') : value);
			}
			return { status, headers, text, url: url.href };
		}
	}

	function dial(url: URL, method: string, headers: Record<string, string>, body: string | undefined, signal: AbortSignal): Promise<IncomingMessage> {
		return new Promise((resolve, reject) => {
			const transport = url.protocol === 'https:' ? https : http;
			const req = transport.request(url, {
				method,
				agent: url.protocol === 'https:' ? httpsAgent : httpAgent,
				signal,
				headers: {
					'user-agent': options.userAgent,
					accept: 'application/json',
					...(body !== undefined ? { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)) } : {}),
					...headers,
				},
			});
			req.once('response', resolve);
			req.once('error', reject);
			req.end(body);
		});
	}

	return {
		async send(request, signal) {
			for (let attempt = 1; ; attempt++) {
				let response: OutboundResponse | null = null;
				let failure: OutboundError | null = null;
				try {
					response = await once(request, signal);
				} catch (error) {
					if (!(error instanceof OutboundError)) throw error;
					failure = error;
				}
				const retriable = failure
					? failure.kind === 'network' || failure.kind === 'timeout'
					: response!.status === 429 || response!.status >= 500;
				if (!retriable || attempt >= (request.retry === false ? 1 : options.maxAttempts) || signal?.aborted) {
					if (failure) throw failure;
					return response!;
				}
				const asked = response ? retryAfterMs(response.headers, RETRY_AFTER_CAP_MS) : null;
				await sleep(asked ?? backoffDelay(attempt, { baseMs: options.backoffBaseMs, maxMs: 30_000 }), signal);
			}
		},
		close() {
			httpAgent.destroy();
			httpsAgent.destroy();
		},
	};
}

async function readText(response: IncomingMessage, maxBytes: number, signal: AbortSignal): Promise<string> {
	const chunks: Buffer[] = [];
	let size = 0;
	const onAbort = () => response.destroy(new DOMException('aborted', 'AbortError'));
	signal.addEventListener('abort', onAbort, { once: true });
	try {
		for await (const chunk of response as AsyncIterable<Buffer>) {
			size += chunk.length;
			if (size > maxBytes) {
				response.destroy();
				throw new OutboundError('too-large', `the answer is larger than ${maxBytes} bytes`);
			}
			chunks.push(chunk);
		}
	} finally {
		signal.removeEventListener('abort', onAbort);
	}
	return Buffer.concat(chunks).toString('utf8');
}

function classify(error: unknown, deadline: AbortSignal): OutboundError {
	const code = (error as { code?: unknown } | null)?.code;
	if (code === BLOCKED_ADDRESS_CODE) return new OutboundError('blocked', (error as Error).message);
	if (deadline.aborted) return new OutboundError('timeout', 'the site did not answer in time');
	const message = error instanceof Error ? error.message : String(error);
	return new OutboundError('network', typeof code === 'string' ? `${code}: ${message}` : message);
}
