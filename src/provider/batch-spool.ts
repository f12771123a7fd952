import { createReadStream, createWriteStream } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';

/** A batch's JSONL, spooled to a temporary file of its own directory. */
export interface Spool {
	dir: string;
	path: string;
	bytes: number;
}

/** Every spool directory's name starts so: a spool is only ever removed from a directory of ours. */
const SPOOL_PREFIX = 'pseo-batch-';

/**
 * Writes the lines, checked, to a new temporary file; resolves to its path and size. A batch of 50,000 pages is
 * about a gigabyte of prompts, which must never sit in memory as one string or buffer while it is built.
 */
export async function spoolLines(lines: string[] | AsyncIterable<string>): Promise<Spool> {
	const dir = await mkdtemp(path.join(tmpdir(), SPOOL_PREFIX));
	const file = path.join(dir, 'input.jsonl');
	let bytes = 0;
	try {
		await pipeline(
			Readable.from(jsonlChunks(lines, (size) => (bytes += size))),
			createWriteStream(file),
		);
	} catch (error) {
		await rm(dir, { recursive: true, force: true });
		throw error;
	}
	return { dir, path: file, bytes };
}

/** Removes a spool's directory; a path that is not a spool of ours is refused. */
export async function removeSpool(file: string): Promise<void> {
	const dir = path.dirname(file);
	if (!path.isAbsolute(file) || !path.basename(dir).startsWith(SPOOL_PREFIX) || path.basename(file) !== 'input.jsonl') {
		throw new TypeError(`Expected a batch spool file, got \`${file}\``);
	}
	await rm(dir, { recursive: true, force: true });
}

async function* jsonlChunks(lines: string[] | AsyncIterable<string>, onBytes: (size: number) => void): AsyncGenerator<Buffer> {
	let index = 0;
	for await (const line of lines) {
		if (typeof line !== 'string' || line.includes('\n') || line.includes('\r')) {
			throw new TypeError(`Expected line ${index} to be a string without line breaks, got \`${String(line).slice(0, 80)}\``);
		}
		index++;
		const chunk = Buffer.from(`${line}\n`, 'utf8');
		onBytes(chunk.length);
		yield chunk;
	}
}

/*
 * A provider whose batch create takes its requests inline (Anthropic) has no upload: its "upload" spools the part,
 * and the engine holds `spool:<path>` as the part's input file, which the create reads and removes. (Gemini's
 * batches took their requests so before they went through the Files API: their parts may still name a spool.)
 */

const SPOOLED = 'spool:';

/**
 * Spools a part's lines for an inline create; resolves to its input file id, `spool:<path>`. The lines are built
 * once, and not held in memory while the engine looks up the part and checks its lease.
 */
export async function spoolBatchInput(lines: string[] | AsyncIterable<string>, filename: string): Promise<string> {
	if (typeof filename !== 'string' || filename.trim() === '') {
		throw new TypeError(`Expected \`filename\` to be a non-empty string, got \`${String(filename)}\` (${typeof filename})`);
	}
	const spool = await spoolLines(lines);
	if (spool.bytes === 0) {
		await removeSpool(spool.path);
		throw new TypeError('Expected `lines` to hold at least one line, got none');
	}
	return `${SPOOLED}${spool.path}`;
}

/** The path of a spooled input file id; null for any other file id. */
export function spoolPathOf(fileId: string): string | null {
	return fileId.startsWith(SPOOLED) ? fileId.slice(SPOOLED.length) : null;
}

/**
 * Reads a spooled input, one parsed line at a time, and removes it once read or failed: whatever comes of the
 * create, nothing sends this spool again (a later step spools the part anew).
 */
export async function readSpooledInput<T>(inputFileId: string, read: (lines: AsyncIterable<unknown>) => Promise<T>): Promise<T> {
	const file = spoolPathOf(inputFileId);
	if (file === null) throw new TypeError(`Expected \`inputFileId\` to be a spooled input, got \`${inputFileId}\``);
	async function* parsed(): AsyncGenerator<unknown> {
		for await (const line of createInterface({ input: createReadStream(file!), crlfDelay: Infinity })) {
			if (line !== '') yield JSON.parse(line) as unknown;
		}
	}
	try {
		return await read(parsed());
	} finally {
		await removeSpool(file);
	}
}
