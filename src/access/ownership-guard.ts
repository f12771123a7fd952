import type { Accountability, Query } from '@directus/types';
import type { Knex } from 'knex';
import { ForbiddenError } from '../errors/index.ts';
import { JOBS } from '../engine/job-store.ts';
import { LEDGER_TABLE } from '../ledger/token-ledger.ts';
import { PLANS } from '../plan/plan-store.ts';
import { PLAN_PAGES } from '../plan/plan-page-store.ts';
import { POSTS } from '../posts/post-store.ts';
import { WEBSITES } from '../websites/website-store.ts';
import { PUBLICATIONS } from '../publishing/publication-store.ts';

/** The owner field of every collection the extension defines. */
export const OWNER_FIELDS = {
	[WEBSITES]: 'backend_user_id',
	[JOBS]: 'user_id',
	[POSTS]: 'user_id',
	[PLANS]: 'user_id',
	[PLAN_PAGES]: 'user_id',
	[LEDGER_TABLE]: 'user_id',
	[PUBLICATIONS]: 'user_id',
} as const;

export type OwnedCollection = keyof typeof OWNER_FIELDS;

/** Fields a non-admin may write through the items API; the rest are the extension's to maintain. */
export const WRITABLE_FIELDS: Partial<Record<OwnedCollection, ReadonlySet<string>>> = {
	[WEBSITES]: new Set(['website_url', 'website_software', 'master_prompt', 'daily_token_cap', 'facts_display', 'provider', 'model', 'data_source', 'auto_refresh']),
	[POSTS]: new Set(['status', 'title', 'meta_title', 'meta_description', 'h1', 'body', 'faq']),
	[PLAN_PAGES]: new Set(['title', 'priority', 'primary_keyword', 'search_intent', 'page_type', 'cluster', 'facts']),
};

/** Collections whose rows a non-admin may delete (their own): a plan page the owner does not want generated. */
export const DELETABLE: ReadonlySet<OwnedCollection> = new Set([PLAN_PAGES]);

/** Whether rows must be narrowed for this caller: every authenticated non-admin, and the public. */
function isRestricted(accountability: Accountability | null | undefined): accountability is Accountability {
	return !!accountability && accountability.admin !== true;
}

/**
 * `<collection>.items.query` filter: a non-admin only ever reads their own rows, through the app, REST or
 * GraphQL. A caller without a user (the public role) matches nothing.
 */
export function restrictQuery(collection: OwnedCollection, query: Query, accountability: Accountability | null): Query {
	if (!isRestricted(accountability)) return query;
	const own = accountability.user
		? { [OWNER_FIELDS[collection]]: { _eq: accountability.user } }
		: { id: { _null: true } };
	return { ...query, filter: query.filter ? { _and: [query.filter, own] } : own };
}

/**
 * `<collection>.items.create` / `.update` filter: a non-admin writes only the fields WRITABLE_FIELDS allows,
 * and only on rows they own.
 */
export async function guardWrite(
	database: Knex,
	collection: OwnedCollection,
	payload: Record<string, unknown>,
	keys: readonly (string | number)[] | null,
	accountability: Accountability | null,
): Promise<Record<string, unknown>> {
	if (!isRestricted(accountability)) return payload;
	const writable = WRITABLE_FIELDS[collection];
	const forbidden = Object.keys(payload).filter((field) => !writable?.has(field));
	if (forbidden.length > 0) throw new ForbiddenError({ resource: `field(s) ${forbidden.join(', ')} of`, id: collection });
	if (keys && keys.length > 0) await assertOwned(database, collection, keys, accountability);
	return payload;
}

/** `<collection>.items.delete` filter: a non-admin deletes only rows they own. */
export async function guardDelete(
	database: Knex,
	collection: OwnedCollection,
	keys: readonly (string | number)[],
	accountability: Accountability | null,
): Promise<readonly (string | number)[]> {
	if (isRestricted(accountability) && keys.length > 0) await assertOwned(database, collection, keys, accountability);
	return keys;
}

async function assertOwned(database: Knex, collection: OwnedCollection, keys: readonly (string | number)[], accountability: Accountability): Promise<void> {
	const owner = OWNER_FIELDS[collection];
	const foreign = await database(collection)
		.whereIn('id', [...keys])
		.andWhere((q) => q.whereNull(owner).orWhereNot(owner, accountability.user ?? ''))
		.first('id');
	if (foreign) throw new ForbiddenError({ resource: collection, id: String(foreign.id) });
}
