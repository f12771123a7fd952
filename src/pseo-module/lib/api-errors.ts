/*
 * What an editor reads when a call fails: the interface's error envelope turned into a sentence, never raw JSON.
 * The status says what kind of problem it is; the envelope's message says which one.
 */

interface ErrorLike {
	response?: { status?: number; data?: unknown };
	message?: string;
}

const LEADS: Record<number, string> = {
	400: 'Please check the form',
	401: 'Your session has ended; sign in again',
	402: 'Not enough tokens',
	403: 'You do not have access to this',
	404: 'Not found',
	409: 'Something is already running',
	502: 'The AI provider is unavailable; nothing was charged',
	503: 'The server is busy; try again in a moment',
};

/** A sentence for an editor from a failed request (axios-style error), or from anything else thrown. */
export function describeApiError(error: unknown): string {
	const { response, message } = (error ?? {}) as ErrorLike;
	if (!response) return message ? `The request failed: ${message}` : 'The request failed.';
	const status = response.status ?? 0;
	const data = response.data as { error?: unknown; errors?: { message?: unknown }[] } | undefined;
	const detail = typeof data?.error === 'string' ? data.error : typeof data?.errors?.[0]?.message === 'string' ? data.errors[0].message : '';
	const lead = LEADS[status] ?? (status === 404 ? 'Not found' : `The server answered ${status}`);
	return detail ? `${lead}: ${detail}` : `${lead}.`;
}

/** Whether the failure means the route is not there (an older bundle, a missing feature), so a screen can say so. */
export function isMissingRoute(error: unknown): boolean {
	const { response } = (error ?? {}) as ErrorLike;
	const data = response?.data as { code?: unknown } | undefined;
	return response?.status === 404 && data?.code === 'PSEO_NOT_FOUND' && /Route/.test(String((data as { error?: unknown }).error ?? ''));
}
