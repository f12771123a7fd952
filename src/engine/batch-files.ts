import type { BatchInfo, BatchCapableProvider } from '../provider/generation-provider.ts';
import type { Logger } from '../shared/logger.ts';

/**
 * Deletes a part's files at the provider once its outcome is stored: the input (the job's prompts) and the output and
 * error files (the pages, which are posts now). Nothing reads them again: a resubmission builds its input from the
 * job's rows. They would otherwise stay in the provider account, counted against its storage, until the provider's
 * own expiry (30 days for batch files at OpenAI). A crash between the part's status and this leaves them there.
 */
export async function discardPartFiles(provider: BatchCapableProvider, batch: BatchInfo, jobId: number, logger: Logger): Promise<void> {
	for (const fileId of [batch.inputFileId, batch.outputFileId, batch.errorFileId]) {
		if (fileId) await discardFile(provider, fileId, { jobId, batchId: batch.id }, logger);
	}
}

/**
 * Best effort: a file that cannot be deleted is logged and left to the provider's expiry, and the job goes on.
 * Resolves to whether the file is gone.
 */
export async function discardFile(provider: BatchCapableProvider, fileId: string, context: Record<string, unknown>, logger: Logger): Promise<boolean> {
	try {
		await provider.deleteFile(fileId);
		return true;
	} catch (error) {
		logger.warn({ err: error, ...context, fileId }, 'pseo batch file could not be deleted at the provider; it stays until the provider expires it');
		return false;
	}
}
