import { removeSpool, spoolBatchInput, spoolPathOf } from './batch-spool.ts';
import { checkId } from './call-checks.ts';
import { ProviderCallError } from './provider-call-error.ts';
import type { BatchLineResult, BatchProvider, ProviderFile } from './types.ts';

/*
 * The file operations of a vendor whose batches take their requests inline and hold their own results (Anthropic's
 * Message Batches), in the engine's terms of files: a part's input is a local spool (batch-spool.ts), and an ended
 * batch's output file is `results:<batch id>`, whose lines the vendor's batch serves and whose deletion deletes the
 * batch. Nothing of ours is left in the vendor's file storage to sweep. The reading of a result line is shared with
 * Gemini's batches, whose results come as a file (google/google-batches.ts).
 */

const RESULTS = 'results:';

export interface InlineBatchVendor {
	/** The results of an ended batch, one JSON line each. */
	resultLines(batchId: string): AsyncIterable<string>;
	/** Deletes an ended batch at the vendor (a 404 is taken as done). */
	deleteBatch(batchId: string): Promise<void>;
}

/** The output file id of an ended batch. */
export function resultsFileOf(batchId: string): string {
	return `${RESULTS}${batchId}`;
}

export function inlineBatchFiles(vendor: InlineBatchVendor): Pick<BatchProvider, 'uploadBatchFile' | 'deleteFile' | 'listBatchFiles' | 'streamFileLines'> {
	return {
		uploadBatchFile: spoolBatchInput,

		async deleteFile(fileId: string): Promise<void> {
			checkId('fileId', fileId);
			const spooled = spoolPathOf(fileId);
			if (spooled !== null) {
				await removeSpool(spooled);
				return;
			}
			if (!fileId.startsWith(RESULTS)) throw new TypeError(`Expected \`fileId\` to be a spool or the results of a batch, got \`${fileId}\``);
			try {
				await vendor.deleteBatch(fileId.slice(RESULTS.length));
			} catch (error) {
				// Already gone: what was asked for holds.
				if (!(error instanceof ProviderCallError && error.status === 404)) throw error;
			}
		},

		// An input leaves nothing at the vendor; the results go with their batch.
		async *listBatchFiles(): AsyncGenerator<ProviderFile> {},

		streamFileLines(fileId: string): AsyncIterable<string> {
			checkId('fileId', fileId);
			if (!fileId.startsWith(RESULTS)) throw new TypeError(`Expected \`fileId\` to be the results of a batch, got \`${fileId}\``);
			return vendor.resultLines(fileId.slice(RESULTS.length));
		},
	};
}

/** What a result line that is not a JSON object reads as. */
export const UNREADABLE_LINE: BatchLineResult = { customId: null, ok: false, error: 'Unreadable line in the batch results' };

/** A result line's JSON object; null when the line is not one. */
export function resultObject(line: string): Record<string, unknown> | null {
	try {
		const parsed: unknown = JSON.parse(line);
		return isRecord(parsed) ? parsed : null;
	} catch {
		return null;
	}
}

export function isRecord(value: unknown): value is Record<string, unknown> {
	return typeof value === 'object' && value !== null && !Array.isArray(value);
}
