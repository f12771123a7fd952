import type { ServiceContext } from '../shared/services.ts';
import { systemServiceOptions } from '../shared/system-context.ts';
import { JOBS } from '../engine/job-store.ts';
import { LEDGER_TABLE } from '../ledger/token-ledger.ts';
import { PLANS } from '../plan/plan-store.ts';
import { PLAN_PAGES } from '../plan/plan-page-store.ts';
import { POSTS } from '../posts/post-store.ts';
import { WEBSITES } from '../websites/website-store.ts';
import { PUBLICATIONS } from '../publishing/publication-store.ts';

/** Fixed ids, so that every instance and every start refers to the same policies and roles. */
const USER_POLICY_ID = '5e0a7c1e-7d1b-4f4e-9a61-3b3f2d9c0a01';
const APP_POLICY_ID = '5e0a7c1e-7d1b-4f4e-9a61-3b3f2d9c0a03';
const USER_ROLE_ID = '5e0a7c1e-7d1b-4f4e-9a61-3b3f2d9c0a02';
const API_ROLE_ID = '5e0a7c1e-7d1b-4f4e-9a61-3b3f2d9c0a04';

interface PermissionSpec {
	collection: string;
	action: 'create' | 'read' | 'update' | 'delete';
	permissions: Record<string, unknown>;
	validation: Record<string, unknown>;
	presets: Record<string, unknown>;
	fields: string[];
}

/*
 * Directus 12's Core licence refuses item-level permission rules (filters such as `$CURRENT_USER`, field lists),
 * so the policy grants whole collections and the extension itself narrows every read and write of a non-admin
 * to their own rows (ownership-guard.ts). That works the same under every licence, through the app, REST and
 * GraphQL alike.
 *
 * What a pSEO user may do: read their websites, jobs, posts, plans, publications and ledger; register and edit their websites;
 * edit the copy of their generated posts; retitle, reprioritise and delete the pages of their plans. Jobs, plans, balances and the ledger are written only by the extension,
 * which charges for them, so there is no create or update on those and none on directus_users.
 */
const USER_PERMISSIONS: PermissionSpec[] = [
	perm(WEBSITES, 'read'),
	perm(WEBSITES, 'create'),
	perm(WEBSITES, 'update'),
	perm(JOBS, 'read'),
	perm(POSTS, 'read'),
	perm(POSTS, 'update'),
	perm(PLANS, 'read'),
	perm(PLAN_PAGES, 'read'),
	perm(PLAN_PAGES, 'update'),
	perm(PLAN_PAGES, 'delete'),
	perm(LEDGER_TABLE, 'read'),
	perm(PUBLICATIONS, 'read'),
];

function perm(collection: string, action: PermissionSpec['action']): PermissionSpec {
	return { collection, action, permissions: {}, validation: {}, presets: {}, fields: ['*'] };
}

/**
 * Creates or refreshes the "pSEO user" policy, its permissions and a "pSEO User" role that carries it. Safe to
 * run on every start and on several instances at once: ids are fixed, and permissions are rewritten only
 * when they differ from USER_PERMISSIONS.
 */
export async function provisionUserPolicy(context: ServiceContext): Promise<{ changed: boolean }> {
	const { services, database } = context;
	let changed = false;
	// The schema is read before the transaction, which must not wait for it (posts/post-revisions.ts).
	const schema = await context.getSchema({ database });
	await database.transaction(async (trx) => {
		const options = systemServiceOptions(trx, schema);
		const policies = new services.PoliciesService(options);
		const roles = new services.RolesService(options);
		const access = new services.AccessService(options);
		const permissionsService = new services.PermissionsService(options);

		const ensure = async (table: string, id: string, create: () => Promise<unknown>) => {
			if ((await trx(table).where('id', id).first('id')) !== undefined) return;
			await create();
			changed = true;
		};
		await ensure('directus_policies', USER_POLICY_ID, () =>
			policies.createOne({
				id: USER_POLICY_ID,
				name: 'pSEO user',
				icon: 'travel_explore',
				description: 'Own pSEO websites, jobs, posts, plans and token ledger, through the API. Managed by pseo-automation.',
				app_access: false,
				admin_access: false,
			}),
		);
		await ensure('directus_policies', APP_POLICY_ID, () =>
			policies.createOne({
				id: APP_POLICY_ID,
				name: 'pSEO app access',
				icon: 'dashboard',
				description: 'Lets pSEO users browse their records in the Directus app. Managed by pseo-automation.',
				app_access: true,
				admin_access: false,
			}),
		);
		await ensure('directus_roles', USER_ROLE_ID, () =>
			roles.createOne({
				id: USER_ROLE_ID,
				name: 'pSEO User',
				icon: 'travel_explore',
				description: 'Content editors: the pSEO endpoints and the Directus app, on their own records.',
			}),
		);
		await ensure('directus_roles', API_ROLE_ID, () =>
			roles.createOne({
				id: API_ROLE_ID,
				name: 'pSEO API Client',
				icon: 'api',
				description: 'API clients: the pSEO endpoints with a token, no app login (and no app seat).',
			}),
		);
		for (const [role, policy] of [
			[USER_ROLE_ID, USER_POLICY_ID],
			[USER_ROLE_ID, APP_POLICY_ID],
			[API_ROLE_ID, USER_POLICY_ID],
		] as const) {
			if (!(await trx('directus_access').where({ role, policy }).first('id'))) {
				await access.createOne({ role, policy });
				changed = true;
			}
		}

		const existing = (await trx('directus_permissions')
			.where('policy', USER_POLICY_ID)
			.select('collection', 'action', 'permissions', 'validation', 'presets', 'fields')) as Record<string, unknown>[];
		if (!samePermissions(existing, USER_PERMISSIONS)) {
			await trx('directus_permissions').where('policy', USER_POLICY_ID).delete();
			await permissionsService.createMany(USER_PERMISSIONS.map((spec) => ({ ...spec, policy: USER_POLICY_ID })));
			changed = true;
		}
	});
	return { changed };
}

function canonical(row: Record<string, unknown>): string {
	const parse = (value: unknown) => {
		const parsed = typeof value === 'string' ? safeJson(value) : value;
		const empty = parsed === null || parsed === undefined || (typeof parsed === 'object' && Object.keys(parsed).length === 0);
		return empty ? null : parsed;
	};
	const fields = Array.isArray(row['fields'])
		? (row['fields'] as string[])
		: typeof row['fields'] === 'string'
			? (row['fields'] as string).split(',')
			: [];
	return JSON.stringify([
		row['collection'],
		row['action'],
		parse(row['permissions']),
		parse(row['validation']),
		parse(row['presets']),
		[...fields].sort(),
	]);
}

function safeJson(value: string): unknown {
	try {
		return JSON.parse(value);
	} catch {
		return value;
	}
}

function samePermissions(existing: Record<string, unknown>[], desired: PermissionSpec[]): boolean {
	if (existing.length !== desired.length) return false;
	const a = existing.map(canonical).sort();
	const b = desired.map((spec) => canonical(spec as unknown as Record<string, unknown>)).sort();
	return a.every((value, index) => value === b[index]);
}
