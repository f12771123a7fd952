import { existsSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { inlineBatchFiles, resultsFileOf } from './inline-batch-files.ts';
import { ProviderCallError } from './provider-call-error.ts';

/** A vendor whose batches are a map of result lines; a deletion of an unknown batch is the vendor's 404. */
function vendor(batches: Record<string, string[]>, failure?: Error) {
	const deleted: string[] = [];
	const files = inlineBatchFiles({
		async *resultLines(batchId) {
			yield* batches[batchId] ?? [];
		},
		async deleteBatch(batchId) {
			if (failure) throw failure;
			if (!(batchId in batches)) throw new ProviderCallError('Not found (HTTP 404)', { reason: 'not_found', retryable: false, status: 404 });
			delete batches[batchId];
			deleted.push(batchId);
		},
	});
	return { files, deleted };
}

describe('inline batch files', () => {
	it('spool a part for the create, and remove a spool no batch will run', async () => {
		const { files } = vendor({});
		const input = await files.uploadBatchFile(['{"a":1}', '{"a":2}'], 'pseo-generation-1-part-0.jsonl');
		expect(input).toMatch(/^spool:\//);
		expect(existsSync(input.slice('spool:'.length))).toBe(true);
		await files.deleteFile(input);
		expect(existsSync(input.slice('spool:'.length))).toBe(false);
		await expect(files.uploadBatchFile([], 'empty.jsonl')).rejects.toThrow(TypeError);
		await expect(files.uploadBatchFile(['{"a":1}'], ' ')).rejects.toThrow(TypeError);
	});

	it('read an ended batch\'s results as its output file, and delete the batch with it, once', async () => {
		const { files, deleted } = vendor({ b1: ['{"x":1}', '{"x":2}'] });
		const lines: string[] = [];
		for await (const line of files.streamFileLines(resultsFileOf('b1'))) lines.push(line);
		expect(lines).toEqual(['{"x":1}', '{"x":2}']);
		await files.deleteFile(resultsFileOf('b1'));
		await files.deleteFile(resultsFileOf('b1')); // already gone: the 404 is taken as done
		expect(deleted).toEqual(['b1']);
	});

	it('leave nothing in the vendor\'s file storage, and refuse file ids of another kind', async () => {
		const { files } = vendor({});
		const listed = [];
		for await (const file of files.listBatchFiles()) listed.push(file);
		expect(listed).toEqual([]);
		await expect(files.deleteFile('file-abc')).rejects.toThrow(TypeError);
		expect(() => files.streamFileLines('spool:/tmp/x')).toThrow(TypeError);
	});

	it('pass on a deletion the vendor refused for another reason', async () => {
		const { files } = vendor({ b1: [] }, new ProviderCallError('Bad request (HTTP 400)', { reason: 'bad_request', retryable: false, status: 400 }));
		await expect(files.deleteFile(resultsFileOf('b1'))).rejects.toMatchObject({ status: 400 });
	});
});
