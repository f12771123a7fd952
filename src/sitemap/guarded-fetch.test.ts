import type { LookupFunction } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { startFixtureServer } from '../../test/support/sitemap-fixture-server.ts';
import type { FixtureServer } from '../../test/support/sitemap-fixture-server.ts';
import { BLOCKED_ADDRESS_CODE, BodyReadError, createGuardedFetcher, guardLookup } from './guarded-fetch.ts';
import type { FetchOutcome, GuardedFetcherOptions } from './guarded-fetch.ts';
import { DEFAULT_SITEMAP_OPTIONS } from './limits.ts';

const servers: FixtureServer[] = [];
afterEach(async () => {
	await Promise.all(servers.splice(0).map((server) => server.close()));
});

async function serve(...args: Parameters<typeof startFixtureServer>): Promise<FixtureServer> {
	const server = await startFixtureServer(...args);
	servers.push(server);
	return server;
}

function options(overrides: Partial<GuardedFetcherOptions> = {}): GuardedFetcherOptions {
	return { ...DEFAULT_SITEMAP_OPTIONS, allowPrivateNetworks: true, ...overrides };
}

/** Resolves every name to one address, as a stub for DNS; never touches the network. */
function lookupTo(address: string, family = 4): LookupFunction {
	return (_hostname, lookupOptions, callback) => {
		if (lookupOptions.all) callback(null, [{ address, family }]);
		else callback(null, address, family);
	};
}

async function fetchOnce(fetcherOptions: GuardedFetcherOptions, url: string): Promise<FetchOutcome & { text?: string }> {
	const fetcher = createGuardedFetcher(fetcherOptions);
	try {
		const outcome = await fetcher.fetch(url);
		if (!outcome.ok) return outcome;
		const parts: Buffer[] = [];
		for await (const chunk of outcome.body) parts.push(chunk);
		return { ...outcome, text: Buffer.concat(parts).toString() };
	} finally {
		fetcher.close();
	}
}

describe('createGuardedFetcher requests', () => {
	it('sends a User-Agent naming pseo-automation', async () => {
		const site = await serve({ '/a': { body: 'x' } });
		await fetchOnce(options(), site.url('/a'));
		expect(site.userAgents).toEqual([DEFAULT_SITEMAP_OPTIONS.userAgent]);
		expect(site.userAgents[0]).toContain('pseo-automation');
	});

	it('sends exactly one request to a failing server: no hidden retries', async () => {
		const site = await serve({ '/a': { status: 503, body: 'busy' } });
		const outcome = await fetchOnce(options(), site.url('/a'));
		expect(outcome).toMatchObject({ ok: false, kind: 'http-error', message: 'HTTP 503' });
		expect(site.hits).toEqual(['/a']);
	});

	it.each([[403], [404], [410], [429]])('counts HTTP %i as not found', async (status) => {
		const site = await serve({ '/a': { status } });
		expect(await fetchOnce(options(), site.url('/a'))).toMatchObject({ ok: false, kind: 'not-found' });
	});

	it('follows five redirects and refuses the sixth', async () => {
		const routes: Record<string, { status: number; headers: Record<string, string> } | { body: string }> = {};
		for (let hop = 0; hop < 6; hop++) routes[`/r${hop}`] = { status: 302, headers: { location: `/r${hop + 1}` } };
		routes['/r6'] = { body: 'arrived' };
		const site = await serve(routes);
		expect(await fetchOnce(options(), site.url('/r1'))).toMatchObject({ ok: true, text: 'arrived', url: site.url('/r6') });
		expect(await fetchOnce(options(), site.url('/r0'))).toMatchObject({ ok: false, kind: 'redirect', message: 'more than 5 redirects' });
		expect(site.hits.filter((hit) => hit === '/r6')).toHaveLength(1);
	});

	it('refuses a redirect to a non-http scheme', async () => {
		const site = await serve({ '/a': { status: 301, headers: { location: 'file:///etc/passwd' } } });
		expect(await fetchOnce(options(), site.url('/a'))).toMatchObject({ ok: false, kind: 'invalid-url' });
	});

	it('lets the caller refuse a redirect before it is followed', async () => {
		const site = await serve({ '/a': { status: 301, headers: { location: '/b' } }, '/b': { body: 'b' } });
		const fetcher = createGuardedFetcher(options());
		const outcome = await fetcher.fetch(site.url('/a'), { onRedirect: (target) => `no thanks: ${target}` });
		fetcher.close();
		expect(outcome).toMatchObject({ ok: false, kind: 'redirect', message: `no thanks: ${site.url('/b')}` });
		expect(site.hits).toEqual(['/a']);
	});

	it('gives up at the per-request deadline when the server never answers', async () => {
		const site = await serve({ '/hang': () => {} });
		const started = performance.now();
		expect(await fetchOnce(options({ requestTimeoutMs: 200 }), site.url('/hang'))).toMatchObject({ ok: false, kind: 'timeout' });
		expect(performance.now() - started).toBeLessThan(2000);
	});

	it('applies the deadline to a body that drips (slowloris)', async () => {
		const site = await serve({
			'/drip': (_req, res) => {
				res.writeHead(200, { 'content-type': 'application/xml' });
				res.write('<urlset>');
				const timer = setInterval(() => res.write(' '), 50);
				res.on('close', () => clearInterval(timer));
			},
		});
		const fetcher = createGuardedFetcher(options({ requestTimeoutMs: 300 }));
		const outcome = await fetcher.fetch(site.url('/drip'));
		if (!outcome.ok) throw new Error('expected a body');
		const started = performance.now();
		const drain = async (): Promise<void> => {
			for await (const _chunk of outcome.body);
		};
		const error = await drain().catch((caught: unknown) => caught);
		fetcher.close();
		expect(error).toBeInstanceOf(BodyReadError);
		expect((error as BodyReadError).kind).toBe('timeout');
		expect(performance.now() - started).toBeLessThan(2000);
	});

	it('aborts a fetch when the caller signal fires', async () => {
		const site = await serve({ '/hang': () => {} });
		const fetcher = createGuardedFetcher(options());
		const controller = new AbortController();
		setTimeout(() => controller.abort(), 50);
		const outcome = await fetcher.fetch(site.url('/hang'), { signal: controller.signal });
		fetcher.close();
		expect(outcome).toMatchObject({ ok: false, kind: 'aborted' });
	});
});

describe('createGuardedFetcher SSRF matrix, private networks disallowed (issue 5, section 4)', () => {
	const closed = (overrides: Partial<GuardedFetcherOptions> = {}): GuardedFetcherOptions => options({ allowPrivateNetworks: false, ...overrides });

	it('refuses a direct loopback URL before connecting', async () => {
		const target = await serve({ '/': { body: 'secret' } });
		expect(await fetchOnce(closed(), target.url('/'))).toMatchObject({ ok: false, kind: 'blocked' });
		expect(await fetchOnce(closed(), `http://[::ffff:127.0.0.1]:${new URL(target.origin).port}/`)).toMatchObject({ ok: false, kind: 'blocked' });
		expect(target.connections).toBe(0);
	});

	it('refuses a host name that resolves to 127.0.0.1, at connect time', async () => {
		const target = await serve({ '/': { body: 'secret' } });
		const url = `http://loopback.test:${new URL(target.origin).port}/`;
		const outcome = await fetchOnce(closed({ lookup: lookupTo('127.0.0.1') }), url);
		expect(outcome).toMatchObject({ ok: false, kind: 'blocked' });
		expect((outcome as { message: string }).message).toContain('loopback');
		expect(target.connections).toBe(0);
	});

	it('refuses localhost resolved by the system resolver', async () => {
		const target = await serve({ '/': { body: 'secret' } });
		expect(await fetchOnce(closed(), `http://localhost:${new URL(target.origin).port}/`)).toMatchObject({ ok: false, kind: 'blocked' });
		expect(target.connections).toBe(0);
	});

	it('refuses a DNS answer that mixes a public and a loopback address (rebinding)', async () => {
		const target = await serve({ '/': { body: 'secret' } });
		// Loopback first: should the guard ever break, the connection lands on the test server, never outside.
		const mixed: LookupFunction = (_hostname, _lookupOptions, callback) =>
			callback(null, [
				{ address: '127.0.0.1', family: 4 },
				{ address: '93.184.215.14', family: 4 },
			]);
		expect(await fetchOnce(closed({ lookup: mixed }), `http://rebind.test:${new URL(target.origin).port}/`)).toMatchObject({ ok: false, kind: 'blocked' });
		expect(target.connections).toBe(0);
	});

	it('refuses a redirect from an allowed first hop to loopback, by IP or by name', async () => {
		const target = await serve({ '/secret': { body: 'secret' } });
		const port = new URL(target.origin).port;
		const front = await serve({
			'/to-ip': { status: 302, headers: { location: `http://127.0.0.1:${port}/secret` } },
			'/to-name': { status: 302, headers: { location: `http://internal.test:${port}/secret` } },
		});
		// Only the first hop passes: its host is exempt, standing in for a public site.
		const policy = closed({ allowedHosts: ['public-site.test'], lookup: lookupTo('127.0.0.1') });
		const frontPort = new URL(front.origin).port;
		expect(await fetchOnce(policy, `http://public-site.test:${frontPort}/to-ip`)).toMatchObject({ ok: false, kind: 'blocked' });
		expect(await fetchOnce(policy, `http://public-site.test:${frontPort}/to-name`)).toMatchObject({ ok: false, kind: 'blocked' });
		expect(front.hits).toEqual(['/to-ip', '/to-name']);
		expect(target.connections).toBe(0);
	});

	it('refuses cloud-metadata answers even with private networks allowed (checked on the resolver alone)', async () => {
		const answer = (address: string, policy: { allowPrivateNetworks: boolean }, all: boolean) =>
			new Promise<NodeJS.ErrnoException | null>((resolve) => {
				guardLookup(lookupTo(address, address.includes(':') ? 6 : 4), policy)('metadata.test', { all }, (error) => resolve(error));
			});
		for (const all of [true, false]) {
			expect((await answer('169.254.169.254', { allowPrivateNetworks: true }, all))?.code).toBe(BLOCKED_ADDRESS_CODE);
			expect((await answer('fd00:ec2::254', { allowPrivateNetworks: true }, all))?.code).toBe(BLOCKED_ADDRESS_CODE);
			expect((await answer('10.0.0.1', { allowPrivateNetworks: false }, all))?.code).toBe(BLOCKED_ADDRESS_CODE);
			expect(await answer('10.0.0.1', { allowPrivateNetworks: true }, all)).toBeNull();
			expect(await answer('93.184.215.14', { allowPrivateNetworks: false }, all)).toBeNull();
		}
	});

	it('refuses non-http(s) URLs', async () => {
		expect(await fetchOnce(options(), 'file:///etc/passwd')).toMatchObject({ ok: false, kind: 'invalid-url' });
		expect(await fetchOnce(options(), 'not a url')).toMatchObject({ ok: false, kind: 'invalid-url' });
	});
});
