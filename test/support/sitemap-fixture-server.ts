import { readFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { createGzip, gzipSync } from 'node:zlib';

/** One canned answer; string bodies have `{{origin}}` replaced by the server's origin. */
export interface FixtureRoute {
	status?: number;
	headers?: Record<string, string>;
	body?: string | Buffer;
	/** Gzip the body (after `{{origin}}` replacement) without saying so in any header. */
	gzip?: boolean;
}

export type FixtureHandler = (req: IncomingMessage, res: ServerResponse, origin: string) => void;

export interface FixtureServer {
	origin: string;
	url(path: string): string;
	/** Request paths (with query) in arrival order. */
	hits: string[];
	/** User-Agent headers in arrival order. */
	userAgents: string[];
	/** TCP connections accepted, requests or not. */
	readonly connections: number;
	close(): Promise<void>;
}

const FIXTURES = new URL('./sitemap-fixtures/', import.meta.url);

/** A fixture file's text. */
export function fixture(name: string): string {
	return readFileSync(new URL(name, FIXTURES), 'utf8');
}

/** Serves `routes` on 127.0.0.1 at a free port, for tests only; unknown paths get 404. */
export async function startFixtureServer(routes: Record<string, FixtureRoute | FixtureHandler>): Promise<FixtureServer> {
	const hits: string[] = [];
	const userAgents: string[] = [];
	let origin = '';
	const server = http.createServer((req, res) => {
		const path = req.url ?? '/';
		hits.push(path);
		userAgents.push(String(req.headers['user-agent'] ?? ''));
		const route = routes[path];
		if (route === undefined) {
			res.writeHead(404, { 'content-type': 'text/plain' }).end('not found');
			return;
		}
		if (typeof route === 'function') {
			route(req, res, origin);
			return;
		}
		let body: string | Buffer = typeof route.body === 'string' ? route.body.replaceAll('{{origin}}', origin) : (route.body ?? '');
		if (route.gzip) body = gzipSync(body);
		res.writeHead(route.status ?? 200, { 'content-type': 'application/xml', ...route.headers });
		res.end(body);
	});
	let connections = 0;
	server.on('connection', () => connections++);
	server.keepAliveTimeout = 1000;
	await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
	origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
	return {
		origin,
		url: (path) => origin + path,
		hits,
		userAgents,
		get connections() {
			return connections;
		},
		close: () =>
			new Promise<void>((resolve) => {
				server.closeAllConnections();
				server.close(() => resolve());
			}),
	};
}

/**
 * A gzip of a valid one-URL urlset (`loc`) padded with `mebibytes` MiB of spaces: a small download that inflates
 * to a huge document. Built in a stream, so the spaces are never held in memory.
 */
export async function gzipBomb(mebibytes: number, loc: string): Promise<Buffer> {
	const gzip = createGzip({ level: 9 });
	const parts: Buffer[] = [];
	gzip.on('data', (chunk: Buffer) => parts.push(chunk));
	const done = new Promise((resolve) => gzip.on('end', resolve));
	gzip.write(`<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"><url><loc>${loc}</loc></url>`);
	const spaces = Buffer.alloc(1024 * 1024, 0x20);
	for (let i = 0; i < mebibytes; i++) {
		if (!gzip.write(spaces)) await new Promise((resolve) => gzip.once('drain', resolve));
	}
	gzip.end('</urlset>');
	await done;
	return Buffer.concat(parts);
}
