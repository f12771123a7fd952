/** The fake OpenAI-compatible provider as a separate process, so its memory and CPU are not the product's. */
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import type { FakeConfigPatch, RequestLogEntry } from '../../test/support/fake-provider/server.ts';
import { ROOT } from '../../test/support/paths.ts';

export interface FakeProcess {
	/** Base URL for OPENAI_BASE_URL, ending in `/v1`. */
	readonly url: string;
	readonly pid: number;
	/** Applies a partial config through `POST /_fake/config`. */
	configure(patch: FakeConfigPatch): Promise<void>;
	/** Back to defaults: config, log, files and batches. */
	reset(): Promise<void>;
	/** The request log of the `/v1` API, oldest first. */
	requests(): Promise<RequestLogEntry[]>;
	/** SIGTERM, then SIGKILL after `graceMs`. */
	stop(graceMs?: number): Promise<void>;
}

/** Starts `test/support/fake-provider/cli.ts` on a free loopback port with Node 22 and waits for its URL. */
export async function spawnFakeProvider(config: FakeConfigPatch = {}, timeoutMs = 20_000): Promise<FakeProcess> {
	const cli = path.join(ROOT, 'test', 'support', 'fake-provider', 'cli.ts');
	const child = spawn(process.execPath, [cli, '--port', '0', '--host', '127.0.0.1', '--config', JSON.stringify(config)], {
		cwd: ROOT,
		stdio: ['ignore', 'pipe', 'pipe'],
	});
	const url = await readUrl(child, timeoutMs);
	const origin = new URL(url).origin;

	const admin = async (method: string, route: string, body?: unknown): Promise<unknown> => {
		const res = await fetch(`${origin}${route}`, {
			method,
			headers: body === undefined ? {} : { 'content-type': 'application/json' },
			body: body === undefined ? undefined : JSON.stringify(body),
		});
		const text = await res.text();
		if (!res.ok) throw new Error(`fake provider ${method} ${route} answered ${res.status}: ${text.slice(0, 500)}`);
		return text ? JSON.parse(text) : null;
	};

	return {
		url,
		pid: child.pid ?? -1,
		configure: async (patch) => void (await admin('POST', '/_fake/config', patch)),
		reset: async () => void (await admin('POST', '/_fake/reset')),
		requests: async () => (await admin('GET', '/_fake/requests')) as RequestLogEntry[],
		stop: (graceMs = 3000) => stopChild(child, graceMs),
	};
}

function readUrl(child: ChildProcess, timeoutMs: number): Promise<string> {
	return new Promise((resolve, reject) => {
		let out = '';
		let err = '';
		const timer = setTimeout(() => fail(new Error(`fake provider printed no URL within ${timeoutMs} ms: ${err}`)), timeoutMs);
		const fail = (error: Error) => {
			clearTimeout(timer);
			child.kill('SIGKILL');
			reject(error);
		};
		child.stderr?.on('data', (chunk: Buffer) => (err += chunk.toString()));
		child.stdout?.on('data', (chunk: Buffer) => {
			out += chunk.toString();
			const newline = out.indexOf('\n');
			if (newline === -1) return;
			clearTimeout(timer);
			try {
				resolve((JSON.parse(out.slice(0, newline)) as { url: string }).url);
			} catch {
				fail(new Error(`fake provider printed ${JSON.stringify(out.slice(0, newline))} instead of its URL`));
			}
		});
		child.once('exit', (code) => fail(new Error(`fake provider exited with ${code} before listening: ${err}`)));
	});
}

function stopChild(child: ChildProcess, graceMs: number): Promise<void> {
	return new Promise((resolve) => {
		if (child.exitCode !== null || child.signalCode !== null) return resolve();
		const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
		child.once('exit', () => {
			clearTimeout(timer);
			resolve();
		});
		child.kill('SIGTERM');
	});
}
