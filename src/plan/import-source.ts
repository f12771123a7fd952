import { createInterface } from 'node:readline';
import type { Readable } from 'node:stream';
import { parse as parseCsv } from 'csv-parse';
import StreamArray from 'stream-json/streamers/StreamArray.js';
import { InvalidPayloadError } from '../errors/index.ts';

/*
 * The rows of a plan import, one at a time with their number (1-based, in the order of the data), whatever they
 * come from: the request's `rows`, or a file of Directus's library read as a stream (CSV with a header row, a JSON
 * array, or JSON Lines), so that 100,000 rows never sit in memory at once.
 */

/** At most this many rows in one import, inline or from a file. */
export const MAX_IMPORT_ROWS = 100_000;

/** One data row and its number. */
export interface NumberedRow {
	number: number;
	row: Record<string, unknown>;
	/** Every column of the data, when its format names them up front (a CSV file's header row, a collection's paths). */
	columns?: readonly string[];
	/** The primary key of the item the row was read from, when the data is a Directus collection. */
	item?: string | null;
}

/** A file of the library, opened for reading. */
export interface OpenedFile {
	stream: Readable;
	type: string | null;
	filename: string | null;
}

type Format = 'csv' | 'json' | 'jsonl';

const bad = (reason: string) => new InvalidPayloadError({ reason });

/** The rows of the request's `rows`. */
export async function* inlineRows(rows: readonly unknown[]): AsyncGenerator<NumberedRow> {
	let number = 0;
	for (const row of rows) yield { number: ++number, row: flatRow(row, number) };
}

/** The rows of a file, by its type or its name's extension; 400 for any other kind of file. */
export async function* fileRows(file: OpenedFile): AsyncGenerator<NumberedRow> {
	const format = formatOf(file);
	let number = 0;
	let columns: string[] | undefined;
	// A CSV record is flat by construction (an object of strings); JSON rows are checked.
	const next = (row: unknown, flat = false): NumberedRow => {
		number++;
		if (number > MAX_IMPORT_ROWS) throw bad(`The file has more than ${MAX_IMPORT_ROWS} rows; at most ${MAX_IMPORT_ROWS} are allowed in one import.`);
		return { number, row: flat ? (row as Record<string, unknown>) : flatRow(row, number), ...(columns ? { columns } : {}) };
	};
	try {
		if (format === 'csv') {
			// Columns from the header row; a row with more or fewer cells than the header is a 400 naming its line.
			const parser = file.stream.pipe(parseCsv({ columns: (header: string[]) => (columns = header.map((name) => name.trim())), bom: true, skip_empty_lines: true }));
			for await (const record of parser) yield next(record, true);
		} else if (format === 'json') {
			const parser = file.stream.pipe(StreamArray.withParser());
			for await (const { value } of parser as AsyncIterable<{ key: number; value: unknown }>) yield next(value);
		} else {
			for await (const line of createInterface({ input: file.stream, crlfDelay: Infinity })) {
				if (line.trim() === '') continue;
				let value: unknown;
				try {
					value = JSON.parse(line);
				} catch {
					throw bad(`row ${number + 1}: not a JSON object (JSON Lines files hold one object per line).`);
				}
				yield next(value);
			}
		}
	} catch (error) {
		file.stream.destroy();
		if (error instanceof InvalidPayloadError) throw error;
		// The parsers' own messages name the line: "Invalid Record Length: expect 3, got 2 on line 7".
		throw bad(`The ${format.toUpperCase()} file could not be read: ${error instanceof Error ? error.message : String(error)}`);
	}
}

function formatOf(file: OpenedFile): Format {
	const type = (file.type ?? '').toLowerCase().split(';', 1)[0]!.trim();
	const name = (file.filename ?? '').toLowerCase();
	if (type === 'text/csv' || type === 'application/csv' || name.endsWith('.csv')) return 'csv';
	if (type === 'application/x-ndjson' || type === 'application/jsonl' || type === 'application/x-jsonlines' || /\.(?:jsonl|ndjson)$/.test(name)) return 'jsonl';
	if (type === 'application/json' || name.endsWith('.json')) return 'json';
	throw bad(`The file must be CSV with a header row, a JSON array or JSON Lines; received ${file.type ?? 'a file of unknown type'}${file.filename ? ` (${file.filename})` : ''}.`);
}

/** A row as a flat object of strings, numbers, booleans and nulls; 400 naming the row otherwise. */
function flatRow(row: unknown, number: number): Record<string, unknown> {
	if (typeof row !== 'object' || row === null || Array.isArray(row)) throw bad(`row ${number}: must be an object of column values, received ${Array.isArray(row) ? 'an array' : typeof row}.`);
	for (const [column, value] of Object.entries(row)) {
		if (value !== null && typeof value === 'object') throw bad(`row ${number}: column "${column}" holds a nested value; rows must be flat.`);
	}
	return row as Record<string, unknown>;
}
