import { ApiError, type GoogleGenAI } from '@google/genai';
import { removeSpool, spoolLines } from '../batch-spool.ts';
import { readLines } from '../line-reader.ts';
import { ProviderCallError } from '../provider-call-error.ts';
import type { ProviderFailure } from '../provider-failure.ts';
import type { RetryContext } from '../retry-policy.ts';
import type { ProviderFile } from '../types.ts';
import type { Logger } from '../../shared/logger.ts';
import { classifyGoogleError } from './google-failure.ts';

/*
 * Gemini's Files API, for the Batch API's input and results files.
 * - An upload is the SDK's resumable upload: a `start` (`X-Goog-Upload-Protocol: resumable`) answered with the upload
 *   URL in `x-goog-upload-url`, then the bytes in requests of 8 MB, the last one `upload, finalize`, read from a file
 *   path one chunk at a time. So a part is spooled to a temporary file first (batch-spool.ts) and never held whole.
 * - The SDK's download only writes a whole file to a path, so a results file is fetched here, at the address Google
 *   documents (`/download/<version>/<name>:download?alt=media`), with the root and the headers the SDK is given, and
 *   its lines are read as they arrive: memory stays bounded by the longest line. The root is the administrator's
 *   setting (`GOOGLE_GEMINI_BASE_URL`), never a user's.
 */

/** The Gemini API's root, the SDK's default when `GOOGLE_GEMINI_BASE_URL` is not set. */
const DEFAULT_BASE_URL = 'https://generativelanguage.googleapis.com';
/**
 * The type the upload declares. JSONL has no registered type; Google's own examples have varied (`jsonl`, which the
 * API has refused at times, and `application/jsonl`, which its REST example sends).
 */
const JSONL_TYPE = 'application/jsonl';
/** A file's resource name: `files/` and an id of lowercase letters, digits and dashes, 40 at most. */
export const FILE_NAME = /^files\/[a-z0-9](?:[a-z0-9-]{0,38}[a-z0-9])?$/;
/** Google's largest page of a file list. */
const LIST_PAGE_SIZE = 100;

/** What a download needs besides the SDK: the key, root, version and headers the SDK is given, and a timeout. */
export interface GoogleConnection {
	apiKey: string;
	/** The API's root without a version, as the SDK is given it; undefined for the SDK's default. */
	baseURL: string | undefined;
	apiVersion: string;
	/** Headers sent with every request, as the SDK sends them. */
	headers: Record<string, string> | undefined;
	/** How long a download may take to answer (its body then streams for as long as it takes). */
	timeoutMs: number;
	secrets: readonly string[];
	logger: Logger;
}

export interface GoogleFilesOptions extends GoogleConnection {
	client: GoogleGenAI;
	/** One SDK call under the provider's retry policy, its errors classified (google-batches.ts). */
	call: <T>(context: RetryContext, run: () => Promise<T>) => Promise<T>;
}

export interface GoogleFiles {
	/** Uploads JSONL lines as a file named `displayName`; resolves to its resource name (`files/...`). */
	upload(lines: string[] | AsyncIterable<string>, displayName: string): Promise<string>;
	/** Deletes a file; resolves as well when Google no longer has it. */
	remove(name: string): Promise<void>;
	/** The key's files, a page at a time, in Google's order. */
	list(): AsyncGenerator<ProviderFile>;
	/** The non-empty lines of a file, streamed. */
	lines(name: string): AsyncGenerator<string>;
}

export function createGoogleFiles(options: GoogleFilesOptions): GoogleFiles {
	const { client, call, apiKey, apiVersion, headers, timeoutMs, secrets, logger } = options;
	const root = (options.baseURL ?? DEFAULT_BASE_URL).replace(/\/+$/, '');
	const onlyRateLimits = (failure: ProviderFailure) => failure.reason === 'rate_limited';

	/** The answer to a download, once its headers are in; an error answer is thrown as the SDK throws one. */
	async function download(name: string): Promise<Response> {
		const controller = new AbortController();
		const timer = setTimeout(() => controller.abort(), timeoutMs);
		try {
			const response = await fetch(`${root}/download/${apiVersion}/${name}:download?alt=media`, {
				headers: { ...headers, 'x-goog-api-key': apiKey },
				signal: controller.signal,
			});
			// The whole error body, as the SDK's ApiError carries it (google-failure.ts reads it back).
			if (!response.ok) throw new ApiError({ status: response.status, message: await response.text() });
			return response;
		} finally {
			clearTimeout(timer);
		}
	}

	return {
		async upload(lines, displayName) {
			const spool = await spoolLines(lines);
			try {
				if (spool.bytes === 0) throw new TypeError('Expected `lines` to hold at least one line, got none');
				// Retried only after a 429, as every provider's upload: a retry starts the upload again, from the spool.
				const file = await call({ op: 'upload', mayRetry: onlyRateLimits, logContext: { bytes: spool.bytes } }, () =>
					client.files.upload({ file: spool.path, config: { mimeType: JSONL_TYPE, displayName } }),
				);
				if (typeof file?.name !== 'string' || !FILE_NAME.test(file.name)) {
					throw new ProviderCallError('Gemini answered an upload without a file name', { reason: 'malformed_output', retryable: true });
				}
				return file.name;
			} finally {
				await removeSpool(spool.path);
			}
		},

		async remove(name) {
			checkFileName(name);
			try {
				// Retried only after a 429: tidying up should not wait out an outage.
				await call({ op: 'delete_file', mayRetry: onlyRateLimits, logContext: { fileId: name } }, () => client.files.delete({ name }));
			} catch (error) {
				// Already gone (deleted before, or expired): what was asked for holds.
				if (!(error instanceof ProviderCallError && error.status === 404)) throw error;
			}
		},

		async *list() {
			let pageToken: string | undefined;
			for (;;) {
				const pager = await call({ op: 'list_files', logContext: { pageToken } }, () =>
					client.files.list({ config: { pageSize: LIST_PAGE_SIZE, ...(pageToken !== undefined ? { pageToken } : {}) } }),
				);
				for (const file of pager.page) {
					const createdAt = secondsOf(file.createTime);
					if (typeof file.name === 'string' && createdAt !== null) yield { id: file.name, filename: file.displayName ?? '', createdAt };
				}
				const next = (pager.params.config as { pageToken?: unknown } | undefined)?.pageToken;
				if (pager.page.length === 0 || typeof next !== 'string' || next === '') return;
				pageToken = next;
			}
		},

		async *lines(name) {
			checkFileName(name);
			const response = await call({ op: 'file_content', logContext: { fileId: name } }, () => download(name));
			if (!response.body) return;
			try {
				yield* readLines(response.body, (error) =>
					logger.debug({ op: 'file_content', fileId: name, reason: classifyGoogleError(error, secrets, false, 0).reason }, 'pseo-automation: closing a Gemini file early failed'),
				);
			} catch (error) {
				if (error instanceof ProviderCallError) throw error;
				const failure = classifyGoogleError(error, secrets, false, 0);
				logger.warn({ op: 'file_content', fileId: name, reason: failure.reason }, 'pseo-automation: reading a Gemini file failed');
				throw new ProviderCallError(`Reading Gemini file ${name} failed midway`, { reason: failure.reason, retryable: true });
			}
		},
	};
}

function checkFileName(name: unknown): void {
	if (typeof name !== 'string' || !FILE_NAME.test(name)) throw new TypeError(`Expected a Gemini file name (\`files/...\`), got \`${String(name)}\``);
}

/** Unix seconds of an RFC 3339 timestamp; null when there is none. */
export function secondsOf(timestamp: string | undefined): number | null {
	const ms = timestamp === undefined ? Number.NaN : Date.parse(timestamp);
	return Number.isNaN(ms) ? null : Math.floor(ms / 1000);
}
