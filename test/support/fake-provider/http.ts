/** Small HTTP helpers for the fake provider: bodies in, JSON and OpenAI-shaped errors out, chunked files out. */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { ApiError } from './chat.ts';

/** Largest request body accepted: the Batch API's 200 MB input limit plus multipart overhead. */
const MAX_BODY_BYTES = 210 * 1024 * 1024;

/** An HTTP failure with an OpenAI error body, thrown by handlers and written by the server. */
export class HttpError extends Error {
	readonly status: number;
	readonly error: ApiError;
	readonly headers: Record<string, string>;

	constructor(status: number, error: ApiError, headers: Record<string, string> = {}) {
		super(error.message);
		this.status = status;
		this.error = error;
		this.headers = headers;
	}
}

/** Reads the whole request body, refusing one over `maxBytes` with 413. */
export async function readBody(req: IncomingMessage, maxBytes = MAX_BODY_BYTES): Promise<Buffer> {
	const chunks: Buffer[] = [];
	let size = 0;
	for await (const chunk of req) {
		size += (chunk as Buffer).length;
		if (size > maxBytes) {
			throw new HttpError(413, { message: 'Request body too large.', type: 'invalid_request_error', param: null, code: null });
		}
		chunks.push(chunk as Buffer);
	}
	return Buffer.concat(chunks);
}

/** Reads a JSON body; an empty body reads as `{}`. */
export async function readJson(req: IncomingMessage, maxBytes = MAX_BODY_BYTES): Promise<unknown> {
	const raw = await readBody(req, maxBytes);
	if (raw.length === 0) return {};
	try {
		return JSON.parse(raw.toString('utf8'));
	} catch {
		throw new HttpError(400, {
			message: 'We could not parse the JSON body of your request.',
			type: 'invalid_request_error',
			param: null,
			code: null,
		});
	}
}

/** Sends a JSON answer. */
export function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
	const payload = JSON.stringify(body);
	res.writeHead(status, {
		'content-type': 'application/json',
		'content-length': Buffer.byteLength(payload),
		...headers,
	});
	res.end(payload);
}

/** Sends `{ error }` with the status. */
export function sendError(res: ServerResponse, status: number, error: ApiError, headers: Record<string, string> = {}): void {
	sendJson(res, status, { error }, headers);
}

/** Streams buffers out, waiting for `drain` when the socket's buffer is full. */
export async function sendChunks(res: ServerResponse, chunks: readonly Buffer[], contentType: string): Promise<void> {
	const length = chunks.reduce((sum, chunk) => sum + chunk.length, 0);
	res.writeHead(200, { 'content-type': contentType, 'content-length': length });
	for (const chunk of chunks) {
		if (res.destroyed) return;
		if (!res.write(chunk)) {
			await new Promise<void>((resolve) => {
				const done = (): void => {
					res.off('drain', done);
					res.off('close', done);
					resolve();
				};
				res.on('drain', done);
				res.on('close', done);
			});
		}
	}
	res.end();
}
