/** In-memory files, held as a list of ~1 MB buffers so large outputs are built and streamed without one huge copy. */
import { newId } from './chat.ts';

/** The wire shape of a file (`GET /v1/files/:id`). */
export interface FileObject {
	id: string;
	object: 'file';
	bytes: number;
	created_at: number;
	expires_at: number | null;
	filename: string;
	purpose: string;
	status: 'processed';
	status_details: null;
}

export interface StoredFile {
	meta: FileObject;
	chunks: Buffer[];
}

const CHUNK_BYTES = 1 << 20;
const THIRTY_DAYS_S = 30 * 24 * 3600;

/** Collects text lines into buffers of about 1 MB each. */
export class ChunkWriter {
	#chunks: Buffer[] = [];
	#pending: string[] = [];
	#pendingLength = 0;
	#bytes = 0;

	/** Appends one line (a newline is added). */
	writeLine(line: string): void {
		this.#pending.push(line, '\n');
		this.#pendingLength += line.length + 1;
		if (this.#pendingLength >= CHUNK_BYTES) this.#flush();
	}

	#flush(): void {
		if (this.#pending.length === 0) return;
		const chunk = Buffer.from(this.#pending.join(''), 'utf8');
		this.#chunks.push(chunk);
		this.#bytes += chunk.length;
		this.#pending = [];
		this.#pendingLength = 0;
	}

	/** The buffers written so far, with their total size. */
	finish(): { chunks: Buffer[]; bytes: number } {
		this.#flush();
		return { chunks: this.#chunks, bytes: this.#bytes };
	}
}

export class FileStore {
	#files = new Map<string, StoredFile>();

	/** Stores a file and returns its wire object. */
	add(options: { filename: string; purpose: string; chunks: Buffer[] }): FileObject {
		const createdAt = Math.floor(Date.now() / 1000);
		const meta: FileObject = {
			id: newId('file-'),
			object: 'file',
			bytes: options.chunks.reduce((sum, chunk) => sum + chunk.length, 0),
			created_at: createdAt,
			expires_at: options.purpose.startsWith('batch') ? createdAt + THIRTY_DAYS_S : null,
			filename: options.filename,
			purpose: options.purpose,
			status: 'processed',
			status_details: null,
		};
		this.#files.set(meta.id, { meta, chunks: options.chunks });
		return meta;
	}

	get(id: string): StoredFile | undefined {
		return this.#files.get(id);
	}

	delete(id: string): boolean {
		return this.#files.delete(id);
	}

	/** Files, newest first. */
	list(): FileObject[] {
		return [...this.#files.values()].map((file) => file.meta).reverse();
	}

	/** The whole content as text; for input files, which the batch runner reads line by line. */
	text(id: string): string | undefined {
		const file = this.#files.get(id);
		return file ? Buffer.concat(file.chunks).toString('utf8') : undefined;
	}

	clear(): void {
		this.#files.clear();
	}
}
