/*
 * What an editor reads when a call fails: what happened, what it cost, and what to do next, in two short
 * sentences; the server's own words (the interface's error envelope) go behind a "Details" disclosure.
 */

interface ErrorLike {
	response?: { status?: number; data?: unknown };
	message?: string;
}

/** A failure in words: the sentence to show, and the technical detail behind it (null when there is none). */
export interface Failure {
	text: string;
	detail: string | null;
}

/** What happened and what to do next, by the answer's status. */
const KINDS: Record<number, { what: string; next: string }> = {
	400: { what: 'The server refused the request', next: 'Check what you entered and try again; the details say what is wrong.' },
	401: { what: 'Your session has ended', next: 'Sign in again.' },
	402: { what: 'There are not enough tokens for this, or a daily limit is reached', next: 'Ask an admin to add tokens, or try again after midnight UTC.' },
	403: { what: 'You do not have access to this', next: 'Ask an admin if you need it.' },
	404: { what: 'This was not found; it may have been deleted', next: 'Reload the page.' },
	409: { what: 'Something is already running here', next: 'Wait for it to end, then try again.' },
	502: { what: 'The AI provider did not answer', next: 'Try again in a few minutes.' },
	503: { what: 'The server is busy', next: 'Try again in a moment.' },
};
const UNREACHABLE = { what: 'The server could not be reached', next: 'Check your connection and try again.' };
const SERVER_ERROR = { what: 'Something went wrong on the server', next: 'Try again; if it keeps failing, tell an admin what the details say.' };

/**
 * A failed request (axios-style error) or anything else thrown, in words. `paid`: the action costs tokens, so the
 * message says what it cost: nothing (a refused request charges nothing), or a refund the server reports.
 */
export function explainFailure(error: unknown, options: { paid?: boolean } = {}): Failure {
	const { response, message } = (error ?? {}) as ErrorLike;
	const status = response?.status ?? 0;
	const data = response?.data as { error?: unknown; code?: unknown; errors?: { message?: unknown }[] } | undefined;
	const said = typeof data?.error === 'string' ? data.error : typeof data?.errors?.[0]?.message === 'string' ? data.errors[0].message : '';
	const kind = !response ? UNREACHABLE : (KINDS[status] ?? (status >= 500 ? SERVER_ERROR : KINDS[400]!));
	const cost = !options.paid ? '' : /refunded/i.test(said) ? ', and the tokens it cost were refunded' : ', and nothing was charged';
	const detail = !response
		? (message ?? null)
		: [`HTTP ${status}`, typeof data?.code === 'string' ? data.code : null].filter(Boolean).join(' ') + (said ? `: ${said}` : '');
	return { text: `${kind.what}${cost}. ${kind.next}`, detail: detail || null };
}

/** Whether the failure means the route is not there (an older bundle, a missing feature), so a screen can say so. */
export function isMissingRoute(error: unknown): boolean {
	const { response } = (error ?? {}) as ErrorLike;
	const data = response?.data as { code?: unknown } | undefined;
	return response?.status === 404 && data?.code === 'PSEO_NOT_FOUND' && /Route/.test(String((data as { error?: unknown }).error ?? ''));
}
