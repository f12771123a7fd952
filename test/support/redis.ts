/**
 * A minimal Redis client over RESP, enough for the multi-instance suite and the chaos run to check that Redis
 * answers, see which keys Directus wrote, and clean their namespace up. Directus brings its own client; this
 * one avoids depending on a transitive package.
 */
import { Socket } from 'node:net';

type RespValue = string | number | null | RespValue[] | Error;

/** Address of a `redis://host:port[/db]` URL. */
function redisAddress(url: string): { host: string; port: number } {
	if (typeof url !== 'string' || !URL.canParse(url)) throw new TypeError(`Redis URL must be redis://host:port, received ${JSON.stringify(url)}`);
	const parsed = new URL(url);
	if (parsed.protocol !== 'redis:') throw new TypeError(`Redis URL must use redis://, received ${JSON.stringify(url)}`);
	return { host: parsed.hostname.replace(/^\[|\]$/g, ''), port: Number(parsed.port || 6379) };
}

/** Sends one command and resolves with its reply (a Redis error reply resolves as an Error value). */
function redisCommand(url: string, args: string[], timeoutMs = 3000): Promise<RespValue> {
	const { host, port } = redisAddress(url);
	return new Promise((resolve, reject) => {
		const socket = new Socket();
		let buffer = Buffer.alloc(0);
		const fail = (error: Error) => {
			socket.destroy();
			reject(error);
		};
		socket.setTimeout(timeoutMs, () => fail(new Error(`Redis at ${host}:${port} did not answer within ${timeoutMs} ms`)));
		socket.once('error', fail);
		socket.connect(port, host, () => socket.write(encode(args)));
		socket.on('data', (chunk: Buffer) => {
			buffer = Buffer.concat([buffer, chunk]);
			const parsed = decode(buffer, 0);
			if (!parsed) return;
			socket.end();
			resolve(parsed.value);
		});
	});
}

/** Whether Redis answers PING at `url`. */
export async function redisReachable(url: string): Promise<boolean> {
	try {
		return (await redisCommand(url, ['PING'])) === 'PONG';
	} catch {
		return false;
	}
}

/** Keys matching a glob pattern (KEYS: fine on a test server, never on a production one). */
export async function redisKeys(url: string, pattern: string): Promise<string[]> {
	const reply = await redisCommand(url, ['KEYS', pattern]);
	if (!Array.isArray(reply)) throw new Error(`KEYS ${pattern} answered ${String(reply)}`);
	return reply.map(String);
}

/** Deletes every key matching `pattern`; returns how many went. */
export async function redisDeleteMatching(url: string, pattern: string): Promise<number> {
	const keys = await redisKeys(url, pattern);
	let deleted = 0;
	for (let i = 0; i < keys.length; i += 500) {
		const reply = await redisCommand(url, ['DEL', ...keys.slice(i, i + 500)]);
		if (typeof reply === 'number') deleted += reply;
	}
	return deleted;
}

function encode(args: string[]): string {
	return `*${args.length}\r\n${args.map((arg) => `$${Buffer.byteLength(arg)}\r\n${arg}\r\n`).join('')}`;
}

function decode(buffer: Buffer, offset: number): { value: RespValue; next: number } | null {
	const end = buffer.indexOf('\r\n', offset);
	if (end < 0) return null;
	const type = String.fromCharCode(buffer[offset] ?? 0);
	const line = buffer.toString('utf8', offset + 1, end);
	const next = end + 2;
	switch (type) {
		case '+':
			return { value: line, next };
		case '-':
			return { value: new Error(line), next };
		case ':':
			return { value: Number(line), next };
		case '$': {
			const length = Number(line);
			if (length < 0) return { value: null, next };
			if (buffer.length < next + length + 2) return null;
			return { value: buffer.toString('utf8', next, next + length), next: next + length + 2 };
		}
		case '*': {
			const count = Number(line);
			if (count < 0) return { value: null, next };
			const items: RespValue[] = [];
			let cursor = next;
			for (let i = 0; i < count; i++) {
				const item = decode(buffer, cursor);
				if (!item) return null;
				items.push(item.value);
				cursor = item.next;
			}
			return { value: items, next: cursor };
		}
		default:
			throw new Error(`unexpected Redis reply type ${JSON.stringify(type)}`);
	}
}
