import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { LookupFunction } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createOutboundClient, OutboundError, type OutboundOptions } from './outbound-client.ts';

/*
 * The SSRF guard of publishing, against real sockets on loopback. Host names are resolved by a table instead of
 * DNS, so that "a public name" and "a name that resolves into a private range" can be staged without a network.
 */

let server: http.Server;
let port: number;
const hits: string[] = [];
let script: ((req: http.IncomingMessage, res: http.ServerResponse) => void) | null = null;

beforeAll(async () => {
	server = http.createServer((req, res) => {
		hits.push(`${req.method} ${req.url}`);
		if (script) return script(req, res);
		res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}');
	});
	await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
	port = (server.address() as AddressInfo).port;
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

/** public.test and redirector.test are "public" (allowed hosts) but live on loopback; internal.test resolves to 10.1.2.3. */
const table: Record<string, string> = { 'public.test': '127.0.0.1', 'redirector.test': '127.0.0.1', 'internal.test': '10.1.2.3', 'sneaky.test': '127.0.0.1' };
const lookup: LookupFunction = (hostname, options, callback) => {
	const address = table[hostname];
	if (!address) return callback(Object.assign(new Error(`ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' }), '', 4);
	if ((options as { all?: boolean }).all) return (callback as unknown as (e: null, a: { address: string; family: number }[]) => void)(null, [{ address, family: 4 }]);
	callback(null, address, 4);
};

const waits: number[] = [];
function client(overrides: Partial<OutboundOptions> = {}) {
	return createOutboundClient({
		allowPrivateNetworks: false,
		allowedHosts: ['public.test', 'redirector.test'],
		userAgent: 'pseo-test',
		timeoutMs: 2000,
		maxAttempts: 3,
		backoffBaseMs: 10,
		lookup,
		sleep: async (ms) => {
			waits.push(ms);
		},
		...overrides,
	});
}

async function refusal(promise: Promise<unknown>): Promise<OutboundError> {
	const error = await promise.then(
		() => null,
		(caught: unknown) => caught,
	);
	expect(error).toBeInstanceOf(OutboundError);
	return error as OutboundError;
}

describe('outbound client: the address guard', () => {
	it('refuses loopback, private ranges and names resolving into them when private networks are not allowed', async () => {
		const guarded = client();
		const before = hits.length;
		for (const url of [`http://127.0.0.1:${port}/`, 'http://10.0.0.1/', 'http://192.168.1.1/', 'http://[::1]/', `http://sneaky.test:${port}/`, 'http://internal.test/']) {
			expect((await refusal(guarded.send({ method: 'GET', url }))).kind, url).toBe('blocked');
		}
		expect(hits.length).toBe(before);
		guarded.close();
	});

	it('refuses the cloud metadata address even when private networks are allowed', async () => {
		const open = client({ allowPrivateNetworks: true });
		expect((await refusal(open.send({ method: 'GET', url: 'http://169.254.169.254/latest/meta-data/' }))).kind).toBe('blocked');
		expect((await open.send({ method: 'GET', url: `http://127.0.0.1:${port}/ok` })).status).toBe(200);
		open.close();
	});

	it('checks every redirect hop: an allowed host redirecting into loopback or a private name is refused', async () => {
		const guarded = client();
		script = (req, res) => {
			if (req.url === '/to-loopback') res.writeHead(307, { location: `http://127.0.0.1:${port}/secret` }).end();
			else if (req.url === '/to-internal') res.writeHead(302, { location: 'http://internal.test/secret' }).end();
			else res.writeHead(200).end('{}');
		};
		expect((await refusal(guarded.send({ method: 'GET', url: `http://redirector.test:${port}/to-loopback` }))).kind).toBe('blocked');
		expect((await refusal(guarded.send({ method: 'GET', url: `http://redirector.test:${port}/to-internal` }))).kind).toBe('blocked');
		expect(hits).not.toContain('GET /secret');
		script = null;
		guarded.close();
	});

	it('refuses to turn a redirected write into a GET', async () => {
		const guarded = client();
		script = (_req, res) => res.writeHead(302, { location: '/elsewhere' }).end();
		expect((await refusal(guarded.send({ method: 'POST', url: `http://public.test:${port}/post`, body: '{}' }))).kind).toBe('redirect');
		script = null;
		guarded.close();
	});
});

describe('outbound client: retries', () => {
	it('retries 429 and 5xx, and the answer\'s retry-after wins over the backoff', async () => {
		const guarded = client();
		let count = 0;
		script = (_req, res) => {
			count++;
			if (count === 1) res.writeHead(503).end();
			else if (count === 2) res.writeHead(429, { 'retry-after': '7' }).end();
			else res.writeHead(200).end('{"done":true}');
		};
		waits.length = 0;
		const response = await guarded.send({ method: 'POST', url: `http://public.test:${port}/retry`, body: '{}' });
		expect(response.status).toBe(200);
		expect(JSON.parse(response.text)).toEqual({ done: true });
		expect(count).toBe(3);
		expect(waits[0]).toBeLessThanOrEqual(10);
		expect(waits[1]).toBe(7000);
		script = null;
		guarded.close();
	});

	it('gives up after maxAttempts with the last answer, and never retries a 4xx', async () => {
		const guarded = client();
		let count = 0;
		script = (req, res) => {
			count++;
			res.writeHead(req.url === '/bad' ? 400 : 500).end();
		};
		expect((await guarded.send({ method: 'GET', url: `http://public.test:${port}/down` })).status).toBe(500);
		expect(count).toBe(3);
		count = 0;
		expect((await guarded.send({ method: 'GET', url: `http://public.test:${port}/bad` })).status).toBe(400);
		expect(count).toBe(1);
		script = null;
		guarded.close();
	});
});
