/**
 * The end-state invariants of the service, checked with SQL straight on the shared PostgreSQL database (not
 * through any instance): what must hold once every instance is quiet, whatever crashed on the way.
 */
import pg from 'pg';
import { PG } from './paths.ts';

export interface Violation {
	invariant: string;
	detail: string;
}

/** Runs `sql` on `database` with a short-lived client. */
export async function query<T = Record<string, unknown>>(database: string, sql: string, params: unknown[] = []): Promise<T[]> {
	const client = new pg.Client({ ...PG, database, connectionTimeoutMillis: 5000 });
	await client.connect();
	try {
		return (await client.query(sql, params)).rows as T[];
	} finally {
		await client.end();
	}
}

/** Jobs still `pending` or `running`. */
export async function unfinishedJobs(database: string): Promise<{ id: number; status: string }[]> {
	return query(database, `SELECT id, status FROM pseo_generations WHERE status IN ('pending', 'running') ORDER BY id`);
}

/** Plans still `generating`. */
export async function generatingPlans(database: string): Promise<{ id: number; user_id: string; lock_expires_at: string | null }[]> {
	return query(database, `SELECT id, user_id, lock_expires_at FROM pseo_main_json WHERE status = 'generating' ORDER BY id`);
}

/**
 * Every invariant of a quiet system:
 * - no job left `pending` or `running`, no plan left `generating`;
 * - `post_counts_total` of every PSEO equals its stored posts; no (PSEO, route) twice;
 * - every balance is >= 0 and equals its ledger: grants - charges + refunds;
 * - every job: one charge of rate x requested, one refund per failed route at the same rate, created + failed =
 *   requested, one post per created page, `failed_routes` lists the failures, and the status follows the counts;
 * - every plan that was charged: refunded once when it failed, never when it is ready.
 */
export async function checkInvariants(database: string): Promise<Violation[]> {
	const violations: Violation[] = [];
	const add = (invariant: string, rows: unknown[]) => {
		for (const row of rows) violations.push({ invariant, detail: JSON.stringify(row) });
	};

	add('no job left pending or running', await unfinishedJobs(database));
	add('no plan left generating', await generatingPlans(database));
	add(
		'post_counts_total equals the posts stored',
		await query(
			database,
			`SELECT p.id, p.post_counts_total, count(po.id)::int AS posts
			 FROM pseo p LEFT JOIN pseo_posts po ON po.pseo_id = p.id
			 GROUP BY p.id, p.post_counts_total
			 HAVING coalesce(p.post_counts_total, 0) <> count(po.id)`,
		),
	);
	add(
		'no duplicate (pseo, route)',
		await query(database, `SELECT pseo_id, route, count(*)::int AS n FROM pseo_posts GROUP BY pseo_id, route HAVING count(*) > 1`),
	);
	add(
		'balance = grants - charges + refunds, never negative',
		await query(
			database,
			`SELECT u.id, coalesce(u.pseo_token_balance, 0) AS balance, coalesce(sum(l.amount), 0)::int AS ledger
			 FROM directus_users u LEFT JOIN pseo_token_ledger l ON l.user_id = u.id
			 GROUP BY u.id, u.pseo_token_balance
			 HAVING coalesce(u.pseo_token_balance, 0) <> coalesce(sum(l.amount), 0) OR coalesce(u.pseo_token_balance, 0) < 0`,
		),
	);
	add(
		'every job is charged once and refunded per failed page, and its counts agree with its posts and its route rows',
		await query(
			database,
			`SELECT g.id, g.status, g.requested_count, g.created_count, g.failed_count, g.token_rate, j.charges, j.charged, j.refunds, j.refunded,
			        (SELECT count(*)::int FROM pseo_posts po WHERE po.generation_id = g.id) AS posts,
			        r.listed, r.routes, r.created_rows, r.open_rows
			 FROM pseo_generations g
			 LEFT JOIN LATERAL (
			   SELECT count(*)::int AS routes,
			          count(*) FILTER (WHERE state = 'failed')::int AS listed,
			          count(*) FILTER (WHERE state = 'created')::int AS created_rows,
			          count(*) FILTER (WHERE state IN ('queued', 'in_part'))::int AS open_rows
			   FROM pseo_generation_routes WHERE generation_id = g.id
			 ) r ON true
			 LEFT JOIN LATERAL (
			   SELECT count(*) FILTER (WHERE reason = 'charge')::int AS charges,
			          coalesce(-sum(amount) FILTER (WHERE reason = 'charge'), 0)::int AS charged,
			          count(*) FILTER (WHERE reason = 'refund')::int AS refunds,
			          coalesce(sum(amount) FILTER (WHERE reason = 'refund'), 0)::int AS refunded
			   FROM pseo_token_ledger l WHERE l.generation_id = g.id
			 ) j ON true
			 WHERE g.status IN ('completed', 'failed') AND NOT (
			   j.charges = 1 AND j.charged = g.token_rate * g.requested_count
			   AND j.refunds = g.failed_count AND j.refunded = g.token_rate * g.failed_count
			   AND g.created_count + g.failed_count = g.requested_count
			   AND (SELECT count(*) FROM pseo_posts po WHERE po.generation_id = g.id) = g.created_count
			   AND r.routes = g.requested_count AND r.listed = g.failed_count AND r.created_rows = g.created_count AND r.open_rows = 0
			   AND (g.status = 'completed') = (g.created_count = g.requested_count)
			 )`,
		),
	);
	add(
		'a failed plan is refunded once, a ready one never',
		await query(
			database,
			`SELECT m.id, m.status, m.tokens_charged, j.charges, j.refunds, j.refunded
			 FROM pseo_main_json m
			 JOIN LATERAL (
			   SELECT count(*) FILTER (WHERE reason = 'charge')::int AS charges,
			          count(*) FILTER (WHERE reason = 'refund')::int AS refunds,
			          coalesce(sum(amount) FILTER (WHERE reason = 'refund'), 0)::int AS refunded
			   FROM pseo_token_ledger l WHERE l.main_json_id = m.id
			 ) j ON true
			 WHERE j.charges > 0 AND NOT (
			   j.charges = 1 AND (
			     (m.status = 'failed' AND j.refunds = 1 AND j.refunded = m.tokens_charged)
			     OR (m.status = 'ready' AND j.refunds = 0)
			   )
			 )`,
		),
	);
	return violations;
}
