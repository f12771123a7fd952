/** The rejection of a task p-queue dropped (`clear()` at shutdown) or of an aborted call. */
export function isAbortError(error: unknown): boolean {
	return error instanceof Error && error.name === 'AbortError';
}
