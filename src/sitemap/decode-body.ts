import { Readable, pipeline } from 'node:stream';
import { createBrotliDecompress, createGunzip, createInflate } from 'node:zlib';
import type { Transform } from 'node:stream';

/** Thrown by `decodeBody` once the decoded document passes `maxBytes`; what was yielded before stands. */
export class BodyLimitError extends Error {
	readonly maxBytes: number;
	constructor(maxBytes: number) {
		super(`document exceeds ${maxBytes} bytes after decompression`);
		this.name = 'BodyLimitError';
		this.maxBytes = maxBytes;
	}
}

const GZIP_LAYERS = 2; // a .gz file served with Content-Encoding: gzip is gzip inside gzip
const ZLIB_CHUNK = 64 * 1024;

/**
 * Decodes a response body as a stream: the Content-Encoding layer (br, deflate) when declared, then gzip
 * wherever the bytes start with the gzip magic 1f 8b, whatever the name or content type say. Decoded bytes
 * are counted and the stream stops with a BodyLimitError past `maxBytes`, so a gzip bomb costs at most
 * `maxBytes` of work and a few chunks of memory.
 */
export async function* decodeBody(source: AsyncIterable<Buffer>, contentEncoding: string | undefined, maxBytes: number): AsyncGenerator<Buffer> {
	let stream = source;
	const encoding = contentEncoding?.trim().toLowerCase();
	if (encoding === 'br') stream = through(stream, createBrotliDecompress({ chunkSize: ZLIB_CHUNK }));
	else if (encoding === 'deflate') stream = through(stream, createInflate({ chunkSize: ZLIB_CHUNK }));
	for (let layer = 0; layer < GZIP_LAYERS; layer++) stream = gunzipIfMagic(stream);
	let total = 0;
	for await (const chunk of stream) {
		total += chunk.length;
		if (total > maxBytes) {
			const keep = chunk.length - (total - maxBytes);
			if (keep > 0) yield chunk.subarray(0, keep);
			throw new BodyLimitError(maxBytes);
		}
		yield chunk;
	}
}

async function* gunzipIfMagic(source: AsyncIterable<Buffer>): AsyncGenerator<Buffer> {
	const iterator = source[Symbol.asyncIterator]();
	const rest: AsyncIterable<Buffer> = { [Symbol.asyncIterator]: () => iterator };
	let head: Buffer = Buffer.alloc(0);
	try {
		while (head.length < 2) {
			const step = await iterator.next();
			if (step.done) {
				if (head.length > 0) yield head;
				return;
			}
			head = head.length === 0 ? step.value : Buffer.concat([head, step.value]);
		}
	} catch (error) {
		await iterator.return?.();
		throw error;
	}
	if (head[0] !== 0x1f || head[1] !== 0x8b) {
		yield head;
		yield* rest;
		return;
	}
	yield* through(prepend(head, rest), createGunzip({ chunkSize: ZLIB_CHUNK }));
}

async function* prepend(head: Buffer, rest: AsyncIterable<Buffer>): AsyncGenerator<Buffer> {
	yield head;
	yield* rest;
}

/** Pipes `source` through a zlib transform with backpressure; stopping early tears both down. */
async function* through(source: AsyncIterable<Buffer>, transform: Transform): AsyncGenerator<Buffer> {
	const input = Readable.from(source, { objectMode: false });
	pipeline(input, transform, () => {
		// Errors surface through the iteration of `transform` below.
	});
	try {
		for await (const chunk of transform) yield chunk as Buffer;
	} finally {
		transform.destroy();
		input.destroy();
	}
}
