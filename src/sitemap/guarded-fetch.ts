import http from 'node:http';
import https from 'node:https';
import { lookup as dnsLookup } from 'node:dns';
import type { IncomingMessage } from 'node:http';
import type { LookupAddress } from 'node:dns';
import type { LookupFunction } from 'node:net';
import { isIpLiteral, refusedAddressReason, stripBrackets } from './address-policy.ts';
import type { AddressPolicy } from './address-policy.ts';
import { BodyLimitError, decodeBody } from './decode-body.ts';

export interface GuardedFetcherOptions extends AddressPolicy {
	userAgent: string;
	requestTimeoutMs: number;
	maxBytes: number;
	maxRedirects: number;
	/** Documents fetched at once; sizes the agents' socket pools. */
	concurrency: number;
	/** Resolver used at connect time; `dns.lookup` when absent. */
	lookup?: LookupFunction;
}

export type FetchFailureKind = 'invalid-url' | 'not-found' | 'http-error' | 'blocked' | 'redirect' | 'timeout' | 'aborted' | 'network' | 'corrupt';

/** Thrown while iterating a body that could not be read to its end; what was yielded before stands. */
export class BodyReadError extends Error {
	readonly kind: FetchFailureKind;
	constructor(kind: FetchFailureKind, message: string) {
		super(message);
		this.name = 'BodyReadError';
		this.kind = kind;
	}
}

export type FetchOutcome =
	| {
			ok: true;
			/** The URL the body came from, after redirects. */
			url: string;
			status: number;
			/** Decoded, size-capped body; iterate once. Stopping early releases the connection. */
			body: AsyncGenerator<Buffer>;
	  }
	| { ok: false; kind: FetchFailureKind; url: string; message: string };

interface FetchRequest {
	/** Aborts the fetch and its body, e.g. the crawl's total budget. */
	signal?: AbortSignal;
	/** Asked before each redirect is followed; returning a message refuses it (e.g. a cycle). */
	onRedirect?: (target: string) => string | null;
}

/** A fetcher that connects only where the address policy allows, checked on the resolved address of every hop. */
export interface GuardedFetcher {
	fetch(url: string, request?: FetchRequest): Promise<FetchOutcome>;
	/** Closes idle keep-alive sockets; call once the crawl is over. */
	close(): void;
}

/** Error code of a connection refused by the address policy. */
export const BLOCKED_ADDRESS_CODE = 'ERR_SITEMAP_BLOCKED_ADDRESS';

const REDIRECT_STATUSES = new Set([301, 302, 303, 307, 308]);
const NOT_FOUND_STATUSES = new Set([401, 403, 404, 410, 429, 451]);

/**
 * Creates the SSRF-guarded fetcher. The address check runs inside the agents' `lookup`, i.e. at connect time
 * on the address actually dialled, so a DNS answer that changes between a check and the connection cannot
 * slip through; IP-literal hosts, which skip `lookup`, are checked before the request. Redirects are followed
 * by hand (each hop connects through the same agents), there are no retries, and each fetch has one deadline
 * covering redirects and body.
 */
export function createGuardedFetcher(options: GuardedFetcherOptions): GuardedFetcher {
	const policy: AddressPolicy = { allowPrivateNetworks: options.allowPrivateNetworks, allowedHosts: options.allowedHosts?.map((host) => host.toLowerCase()) };
	const guardedLookup = guardLookup(options.lookup ?? (dnsLookup as unknown as LookupFunction), policy);
	const agentOptions = { keepAlive: true, maxSockets: options.concurrency, lookup: guardedLookup };
	const httpAgent = new http.Agent(agentOptions);
	const httpsAgent = new https.Agent(agentOptions);

	async function fetchDocument(startUrl: string, request: FetchRequest = {}): Promise<FetchOutcome> {
		const deadline = AbortSignal.timeout(options.requestTimeoutMs);
		const signal = request.signal ? AbortSignal.any([deadline, request.signal]) : deadline;
		let url: URL;
		try {
			url = new URL(startUrl);
		} catch {
			return { ok: false, kind: 'invalid-url', url: startUrl, message: 'not a valid URL' };
		}
		for (let hop = 0; ; hop++) {
			if (url.protocol !== 'http:' && url.protocol !== 'https:') {
				return { ok: false, kind: 'invalid-url', url: url.href, message: `scheme ${url.protocol} is not http(s)` };
			}
			if (isIpLiteral(url.hostname)) {
				const reason = refusedAddressReason(url.hostname, url.hostname, policy);
				if (reason) return { ok: false, kind: 'blocked', url: url.href, message: `refused ${stripBrackets(url.hostname)}: ${reason}` };
			}
			let response: IncomingMessage;
			try {
				response = await send(url, signal);
			} catch (error) {
				return failure(url.href, error, deadline, request.signal);
			}
			const status = response.statusCode ?? 0;
			if (REDIRECT_STATUSES.has(status) && response.headers.location !== undefined) {
				response.destroy();
				let target: URL;
				try {
					target = new URL(response.headers.location, url);
				} catch {
					return { ok: false, kind: 'redirect', url: url.href, message: `unusable redirect location ${JSON.stringify(response.headers.location)}` };
				}
				if (hop >= options.maxRedirects) {
					return { ok: false, kind: 'redirect', url: url.href, message: `more than ${options.maxRedirects} redirects` };
				}
				const refusal = request.onRedirect?.(target.href) ?? null;
				if (refusal) return { ok: false, kind: 'redirect', url: target.href, message: refusal };
				url = target;
				continue;
			}
			if (status < 200 || status > 299) {
				response.destroy();
				const kind: FetchFailureKind = NOT_FOUND_STATUSES.has(status) ? 'not-found' : 'http-error';
				return { ok: false, kind, url: url.href, message: `HTTP ${status}` };
			}
			return { ok: true, url: url.href, status, body: guardBody(response, signal, deadline, request.signal) };
		}
	}

	function send(url: URL, signal: AbortSignal): Promise<IncomingMessage> {
		return new Promise((resolve, reject) => {
			const transport = url.protocol === 'https:' ? https : http;
			const req = transport.request(url, {
				method: 'GET',
				agent: url.protocol === 'https:' ? httpsAgent : httpAgent,
				signal,
				headers: {
					'user-agent': options.userAgent,
					accept: 'application/xml, text/xml;q=0.9, text/plain;q=0.8, */*;q=0.5',
					'accept-encoding': 'gzip',
				},
			});
			req.once('response', (response) => {
				// Later errors reach the reader through the body's iteration; these keep them from going unhandled.
				req.on('error', ignore);
				response.on('error', ignore);
				resolve(response);
			});
			req.once('error', reject);
			req.end();
		});
	}

	async function* guardBody(response: IncomingMessage, signal: AbortSignal, deadline: AbortSignal, callerSignal: AbortSignal | undefined): AsyncGenerator<Buffer> {
		const onAbort = (): void => {
			response.destroy(new DOMException('aborted', 'AbortError'));
		};
		signal.addEventListener('abort', onAbort, { once: true });
		try {
			signal.throwIfAborted();
			yield* decodeBody(response, header(response.headers['content-encoding']), options.maxBytes);
		} catch (error) {
			if (error instanceof BodyLimitError) throw error;
			const { kind, message } = describeFetchError(error, deadline, callerSignal);
			throw new BodyReadError(kind, message);
		} finally {
			signal.removeEventListener('abort', onAbort);
			response.destroy();
		}
	}

	return {
		fetch: fetchDocument,
		close() {
			httpAgent.destroy();
			httpsAgent.destroy();
		},
	};
}

/**
 * Wraps a resolver so that an answer containing any address the policy refuses fails with
 * BLOCKED_ADDRESS_CODE. Installed as the agents' `lookup`, it runs at connect time on the address dialled.
 */
export function guardLookup(baseLookup: LookupFunction, policy: AddressPolicy): LookupFunction {
	return (hostname, lookupOptions, callback) => {
		baseLookup(hostname, lookupOptions, (error, address, family) => {
			if (error) return callback(error, address, family);
			const answers: LookupAddress[] = Array.isArray(address) ? address : [{ address, family: family ?? 0 }];
			for (const answer of answers) {
				const reason = refusedAddressReason(answer.address, hostname, policy);
				// Any refused answer refuses the host: a mixed answer is a rebinding attempt as often as not.
				if (reason) return callback(blockedError(hostname, answer.address, reason), address, family);
			}
			callback(null, address, family);
		});
	};
}

/** Classifies an error raised while fetching or reading a body, for logs and reasons. */
function describeFetchError(error: unknown, deadline?: AbortSignal, callerSignal?: AbortSignal): { kind: FetchFailureKind; message: string } {
	const code = (error as { code?: unknown } | null)?.code;
	if (code === BLOCKED_ADDRESS_CODE) return { kind: 'blocked', message: (error as Error).message };
	if (deadline?.aborted) return { kind: 'timeout', message: 'request deadline passed' };
	if (callerSignal?.aborted || (error as Error | null)?.name === 'AbortError') return { kind: 'aborted', message: 'aborted' };
	const message = error instanceof Error ? error.message : String(error);
	if (typeof code === 'string' && code.startsWith('Z_')) return { kind: 'corrupt', message: `compressed body is damaged (${message})` };
	return { kind: 'network', message: typeof code === 'string' ? `${code}: ${message}` : message };
}

function failure(url: string, error: unknown, deadline: AbortSignal, callerSignal: AbortSignal | undefined): FetchOutcome {
	const { kind, message } = describeFetchError(error, deadline, callerSignal);
	return { ok: false, kind, url, message };
}

function blockedError(hostname: string, address: string, reason: string): NodeJS.ErrnoException {
	const error: NodeJS.ErrnoException = new Error(`refused ${hostname} (${address}): ${reason}`);
	error.code = BLOCKED_ADDRESS_CODE;
	return error;
}

function ignore(): void {}

function header(value: string | string[] | undefined): string | undefined {
	return Array.isArray(value) ? value.join(',') : value;
}
