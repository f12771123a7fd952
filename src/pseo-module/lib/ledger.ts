/*
 * The ledger as the module lists it: one user's entries ("Your ledger"), or every user's for an admin ("All
 * users"), filtered by user, website and reason, a page at a time; and the names its rows and notes refer to.
 */

export const LEDGER_REASONS = ['grant', 'charge', 'refund'] as const;
export type LedgerReason = (typeof LEDGER_REASONS)[number];

export interface Person {
	id: string;
	first_name: string | null;
	last_name: string | null;
	email: string | null;
}

export interface LedgerRow {
	id: number;
	amount: number;
	reason: string;
	balance_after: number | null;
	note: string | null;
	date_created: string;
	pseo_id: number | null;
	/** The user's id, or the user themselves when the list was asked with `withUser` (an admin's). */
	user_id: string | Person | null;
}

export interface LedgerQuery {
	/** Whose entries; an admin's "All users" view leaves it out, or filters by the user chosen. */
	userId?: string | null;
	pseoId?: number | null;
	reason?: LedgerReason | null;
	/** 1-based. */
	page: number;
	limit: number;
	/** Read each entry's user with it (name and e-mail): admins only, who may read every user. */
	withUser?: boolean;
}

const FIELDS = ['id', 'amount', 'reason', 'balance_after', 'note', 'date_created', 'pseo_id', 'user_id'];
const USER_FIELDS = ['user_id.id', 'user_id.first_name', 'user_id.last_name', 'user_id.email'];

/** The items API's query for a page of the ledger, newest first, with the count of all matching entries. */
export function ledgerParams(query: LedgerQuery): Record<string, unknown> {
	const filters: Record<string, unknown>[] = [];
	if (query.userId) filters.push({ user_id: { _eq: query.userId } });
	if (query.pseoId !== undefined && query.pseoId !== null) filters.push({ pseo_id: { _eq: query.pseoId } });
	if (query.reason) filters.push({ reason: { _eq: query.reason } });
	return {
		fields: query.withUser ? [...FIELDS.filter((field) => field !== 'user_id'), ...USER_FIELDS] : FIELDS,
		sort: ['-id'],
		limit: query.limit,
		page: query.page,
		meta: 'filter_count',
		...(filters.length > 0 ? { filter: filters.length === 1 ? filters[0] : { _and: filters } } : {}),
	};
}

/** A user as people know them: their name, else their e-mail address; never their id. */
export function personName(person: Pick<Person, 'first_name' | 'last_name' | 'email'> | null | undefined): string {
	const name = [person?.first_name, person?.last_name].filter((part) => part && part.trim()).join(' ');
	return name || person?.email || 'a deleted user';
}

const UUID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/gi;

/** A note cut into its text and the users it names by id ("set by 9a9e327c-…", an admin's grant). */
export function noteParts(note: string): ({ text: string } | { userId: string })[] {
	const parts: ({ text: string } | { userId: string })[] = [];
	let last = 0;
	for (const match of note.matchAll(UUID)) {
		if (match.index > last) parts.push({ text: note.slice(last, match.index) });
		parts.push({ userId: match[0].toLowerCase() });
		last = match.index + match[0].length;
	}
	if (last < note.length) parts.push({ text: note.slice(last) });
	return parts;
}

/** The user ids the notes of `rows` name. */
export function notedUserIds(rows: readonly Pick<LedgerRow, 'note'>[]): string[] {
	return [...new Set(rows.flatMap((row) => noteParts(row.note ?? '').flatMap((part) => ('userId' in part ? [part.userId] : []))))];
}

/** How many pages `total` entries fill, at least one. */
export function pageCount(total: number, limit: number): number {
	return Math.max(1, Math.ceil(total / Math.max(1, limit)));
}
