import { Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { fileRows, inlineRows, type NumberedRow } from './import-source.ts';

const file = (content: string, type: string | null, filename: string | null = null) => ({ stream: Readable.from([Buffer.from(content)]), type, filename });

async function all(rows: AsyncIterable<NumberedRow>): Promise<NumberedRow[]> {
	const out: NumberedRow[] = [];
	for await (const row of rows) out.push(row);
	return out;
}

describe('fileRows', () => {
	it('reads CSV with a header row (BOM, quotes, CRLF, blank lines), each row with the header\'s columns', async () => {
		const rows = await all(fileRows(file('\uFEFFcity, service\r\n"São Paulo","Gas, water"\r\n\r\nLeeds,Roofing\r\n', 'text/csv')));
		const columns = ['city', 'service'];
		expect(rows).toEqual([
			{ number: 1, row: { city: 'São Paulo', service: 'Gas, water' }, columns },
			{ number: 2, row: { city: 'Leeds', service: 'Roofing' }, columns },
		]);
	});

	it('reads a JSON array and JSON Lines, by type or by extension', async () => {
		expect(await all(fileRows(file('[{"a":1},{"a":"two"}]', 'application/json')))).toEqual([
			{ number: 1, row: { a: 1 } },
			{ number: 2, row: { a: 'two' } },
		]);
		expect(await all(fileRows(file('{"a":1}\n\n{"a":2}\n', 'application/octet-stream', 'data.jsonl')))).toEqual([
			{ number: 1, row: { a: 1 } },
			{ number: 2, row: { a: 2 } },
		]);
	});

	it('names the row or line that is wrong', async () => {
		await expect(all(fileRows(file('a,b\n1,2\n3\n', 'text/csv')))).rejects.toThrow(/CSV file could not be read: .*line 3/);
		await expect(all(fileRows(file('{"a":1}\nnot json\n', 'application/x-ndjson')))).rejects.toThrow(/row 2: not a JSON object/);
		await expect(all(fileRows(file('[{"a":1},[1,2]]', 'application/json')))).rejects.toThrow(/row 2: must be an object/);
		await expect(all(fileRows(file('[{"a":1},', 'application/json')))).rejects.toThrow(/JSON file could not be read/);
	});

	it('refuses a file of another kind', async () => {
		await expect(all(fileRows(file('%PDF', 'application/pdf', 'x.pdf')))).rejects.toThrow(/CSV with a header row, a JSON array or JSON Lines; received application\/pdf \(x.pdf\)/);
	});
});

describe('inlineRows', () => {
	it('numbers rows and refuses nested values', async () => {
		expect(await all(inlineRows([{ a: 1 }, { a: null }]))).toEqual([
			{ number: 1, row: { a: 1 } },
			{ number: 2, row: { a: null } },
		]);
		await expect(all(inlineRows([{ a: 1 }, { a: { b: 2 } }]))).rejects.toThrow(/row 2: column "a" holds a nested value/);
	});
});
