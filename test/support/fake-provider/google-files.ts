/**
 * The Gemini API's Files API as the Batch API uses it, held in memory:
 * - the resumable upload of `POST /upload/v1beta/files`: a `start` (`X-Goog-Upload-Protocol: resumable`,
 *   `X-Goog-Upload-Command: start`, the size and type in `X-Goog-Upload-Header-Content-Length` and `-Content-Type`,
 *   the file's `displayName` in the JSON body) is answered with the upload URL in `x-goog-upload-url`; then the bytes
 *   go to that URL in `upload` requests at increasing `X-Goog-Upload-Offset`s, the last one `upload, finalize` (or
 *   a bare `finalize`), answered with the file and `x-goog-upload-status: final`. The SDK sends every file so,
 *   8 MB a request; it never uses the single-request (multipart) upload, which is not served;
 * - `GET /v1beta/files/{id}`, `GET /v1beta/files` (newest first, paged) and `DELETE /v1beta/files/{id}`;
 * - the files the Batch API writes (a batch's results, `source: GENERATED`), and the download of any file,
 *   `GET /download/v1beta/files/{id}:download?alt=media` as Google documents it, or without `/download` as the SDK's
 *   `files.download` asks (server.ts sends it, honouring `holdFileAfterLines`).
 * Files expire after 48 hours at Google; here they stay until deleted or `reset()`.
 */
import { createHash, randomBytes } from 'node:crypto';
import { apiError } from './chat.ts';
import type { ApiError } from './chat.ts';

/** The wire shape of a file (`GET /v1beta/files/{id}`, and the `file` of a finalized upload). */
export interface GoogleFile {
	name: string;
	displayName?: string;
	mimeType: string;
	/** int64, which Google's JSON writes as a string. */
	sizeBytes: string;
	createTime: string;
	updateTime: string;
	expirationTime: string;
	sha256Hash: string;
	uri: string;
	/** Set for the files the API generates, which are the ones meant to be downloaded. */
	downloadUri?: string;
	state: 'ACTIVE';
	source: 'UPLOADED' | 'GENERATED';
}

interface StoredFile {
	file: GoogleFile;
	chunks: Buffer[];
}

/** An upload between its `start` and its `finalize`. */
interface UploadSession {
	displayName: string | undefined;
	mimeType: string;
	/** The size the start declared, when it declared one. */
	declared: number | null;
	chunks: Buffer[];
	received: number;
}

type Failure = { ok: false; status: number; error: ApiError };

const FORTY_EIGHT_HOURS_MS = 48 * 3600 * 1000;
/** Google's largest page of files, and the page it gives when none is asked for. */
const MAX_PAGE_SIZE = 100;
const DEFAULT_PAGE_SIZE = 10;
/** A file's id as Google's: lowercase letters, digits and dashes, neither first nor last a dash. */
export const GOOGLE_FILE_ID = '[a-z0-9](?:[a-z0-9-]{0,38}[a-z0-9])?';

function fail(status: number, message: string): Failure {
	return { ok: false, status, error: apiError(message) };
}

function isRecord(value: unknown): value is Record<string, unknown> {
	return typeof value === 'object' && value !== null && !Array.isArray(value);
}

export interface GoogleFileStoreOptions {
	/** The server's root (without a version): the origin of the upload URLs and of each file's `uri`. */
	origin: () => string;
	/** Seconds an upload is stamped in the past (`uploadAgeS`), as a file uploaded a while ago. */
	uploadAgeS: () => number;
}

export class GoogleFileStore {
	#files = new Map<string, StoredFile>();
	#order: string[] = [];
	#uploads = new Map<string, UploadSession>();
	#options: GoogleFileStoreOptions;

	constructor(options: GoogleFileStoreOptions) {
		this.#options = options;
	}

	/**
	 * The `start` of a resumable upload: its headers (lower-cased, as Node gives them) and JSON body. Resolves to the
	 * headers of the answer, the upload URL among them.
	 */
	startUpload(headers: Record<string, string | string[] | undefined>, body: unknown): { ok: true; headers: Record<string, string> } | Failure {
		const header = (name: string) => {
			const value = headers[name];
			return typeof value === 'string' ? value.trim() : undefined;
		};
		if (header('x-goog-upload-protocol') !== 'resumable') {
			return fail(400, 'Only the resumable upload protocol is served: send X-Goog-Upload-Protocol: resumable.');
		}
		if (header('x-goog-upload-command') !== 'start') return fail(400, 'A resumable upload begins with X-Goog-Upload-Command: start.');
		const file = isRecord(body) && isRecord(body.file) ? body.file : {};
		const mimeType = header('x-goog-upload-header-content-type') ?? (typeof file.mimeType === 'string' ? file.mimeType : undefined);
		if (mimeType === undefined || mimeType === '') return fail(400, 'Upload has no MIME type: send X-Goog-Upload-Header-Content-Type.');
		const length = header('x-goog-upload-header-content-length');
		const declared = length === undefined ? null : Number(length);
		if (declared !== null && !(Number.isSafeInteger(declared) && declared >= 0)) return fail(400, `Invalid X-Goog-Upload-Header-Content-Length: ${length}`);
		if (file.displayName !== undefined && (typeof file.displayName !== 'string' || file.displayName.length > 512)) {
			return fail(400, '* File.display_name: must be a string of at most 512 characters');
		}
		const uploadId = randomBytes(16).toString('base64url');
		this.#uploads.set(uploadId, { displayName: file.displayName as string | undefined, mimeType, declared, chunks: [], received: 0 });
		return {
			ok: true,
			headers: {
				'x-goog-upload-status': 'active',
				'x-goog-upload-url': `${this.#options.origin()}/upload/v1beta/files?upload_id=${uploadId}&upload_protocol=resumable`,
				'x-goog-upload-chunk-granularity': String(256 * 1024),
			},
		};
	}

	/**
	 * One request of an upload's bytes: `command` is `upload`, `upload, finalize` or `finalize`; `offset` must be the
	 * bytes received so far. A finalized upload becomes a file, which the answer carries.
	 */
	uploadChunk(uploadId: string, command: string | undefined, offset: string | undefined, bytes: Buffer): { ok: true; headers: Record<string, string>; file: GoogleFile | null } | Failure {
		const session = this.#uploads.get(uploadId);
		if (!session) return fail(404, 'No upload session with this id: it was finalized, or never started.');
		const commands = (command ?? '').split(',').map((part) => part.trim()).filter((part) => part !== '');
		const uploading = commands.includes('upload');
		const finalizing = commands.includes('finalize');
		if (!(uploading || finalizing) || commands.some((part) => part !== 'upload' && part !== 'finalize')) {
			return fail(400, `Invalid X-Goog-Upload-Command: ${command ?? '(none)'}`);
		}
		if (uploading && (offset === undefined || Number(offset) !== session.received)) {
			return fail(400, `Invalid X-Goog-Upload-Offset ${offset ?? '(none)'}: ${session.received} bytes were received so far.`);
		}
		if (!uploading && bytes.length > 0) return fail(400, 'A finalize without upload carries no bytes.');
		// A refused request keeps none of its bytes: the client may send them again.
		const received = session.received + bytes.length;
		if (finalizing && session.declared !== null && received !== session.declared) {
			return fail(400, `Upload finalized with ${received} bytes, ${session.declared} declared.`);
		}
		if (bytes.length > 0) session.chunks.push(bytes);
		session.received = received;
		if (!finalizing) return { ok: true, headers: { 'x-goog-upload-status': 'active' }, file: null };
		this.#uploads.delete(uploadId);
		const file = this.#add({ displayName: session.displayName, mimeType: session.mimeType, chunks: session.chunks, source: 'UPLOADED' }, this.#options.uploadAgeS());
		return { ok: true, headers: { 'x-goog-upload-status': 'final' }, file };
	}

	/** Stores a file the API wrote itself (a batch's results), as ~1 MB buffers. */
	addGenerated(chunks: Buffer[], mimeType: string): GoogleFile {
		return this.#add({ displayName: undefined, mimeType, chunks, source: 'GENERATED' }, 0);
	}

	get(id: string): { ok: true; file: GoogleFile } | Failure {
		const stored = this.#files.get(id);
		return stored ? { ok: true, file: stored.file } : notFound();
	}

	/** A file's bytes, for its download. */
	content(id: string): { ok: true; file: GoogleFile; chunks: readonly Buffer[] } | Failure {
		const stored = this.#files.get(id);
		return stored ? { ok: true, file: stored.file, chunks: stored.chunks } : notFound();
	}

	/** A file's text, for a batch that reads its input file. */
	text(id: string): string | null {
		const stored = this.#files.get(id);
		return stored ? Buffer.concat(stored.chunks).toString('utf8') : null;
	}

	/** A page of files, newest first; `pageToken` comes from the previous page. */
	list(rawPageSize: string | null, pageToken: string | null): { ok: true; files: GoogleFile[]; nextPageToken?: string } | Failure {
		const pageSize = rawPageSize === null ? DEFAULT_PAGE_SIZE : Number(rawPageSize);
		if (!Number.isInteger(pageSize) || pageSize < 1) return fail(400, `* ListFilesRequest.page_size: must be a positive integer, got ${rawPageSize}`);
		const newestFirst = [...this.#order].reverse();
		let start = 0;
		if (pageToken !== null && pageToken !== '') {
			// The token names the last file given, so that a file deleted meanwhile skips nothing, and its offset.
			const token = /^(\d+):(.+)$/.exec(Buffer.from(pageToken, 'base64url').toString('utf8'));
			if (!token) return fail(400, 'Invalid page token.');
			const after = newestFirst.indexOf(token[2]!);
			start = after === -1 ? Math.min(Number(token[1]), newestFirst.length) : after + 1;
		}
		const ids = newestFirst.slice(start, start + Math.min(pageSize, MAX_PAGE_SIZE));
		const files = ids.map((id) => this.#files.get(id)!.file);
		const lastId = ids.at(-1);
		return start + ids.length < newestFirst.length && lastId !== undefined
			? { ok: true, files, nextPageToken: Buffer.from(`${start + ids.length}:${lastId}`).toString('base64url') }
			: { ok: true, files };
	}

	delete(id: string): { ok: true } | Failure {
		if (!this.#files.delete(id)) return notFound();
		this.#order = this.#order.filter((other) => other !== id);
		return { ok: true };
	}

	clear(): void {
		this.#files.clear();
		this.#order = [];
		this.#uploads.clear();
	}

	#add(options: { displayName: string | undefined; mimeType: string; chunks: Buffer[]; source: GoogleFile['source'] }, ageS: number): GoogleFile {
		const id = options.source === 'GENERATED' ? `batch-${randomBytes(10).toString('hex')}` : randomBytes(6).toString('hex');
		const created = Date.now() - ageS * 1000;
		const hash = createHash('sha256');
		for (const chunk of options.chunks) hash.update(chunk);
		const origin = this.#options.origin();
		const file: GoogleFile = {
			name: `files/${id}`,
			...(options.displayName === undefined ? {} : { displayName: options.displayName }),
			mimeType: options.mimeType,
			sizeBytes: String(options.chunks.reduce((sum, chunk) => sum + chunk.length, 0)),
			createTime: new Date(created).toISOString(),
			updateTime: new Date(created).toISOString(),
			expirationTime: new Date(created + FORTY_EIGHT_HOURS_MS).toISOString(),
			sha256Hash: hash.digest('base64'),
			uri: `${origin}/v1beta/files/${id}`,
			...(options.source === 'GENERATED' ? { downloadUri: `${origin}/download/v1beta/files/${id}:download?alt=media` } : {}),
			state: 'ACTIVE',
			source: options.source,
		};
		this.#files.set(id, { file, chunks: options.chunks });
		this.#order.push(id);
		return file;
	}
}

function notFound(): Failure {
	return fail(404, 'Requested entity was not found.');
}
