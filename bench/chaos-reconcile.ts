/**
 * The chaos run's reconciliation: what it did (the ids of its 202s, the routes it made fail, the kills), what the
 * provider saw (the fake's own request log) and what the instances logged, held against the shared database.
 * Each check returns violations; the run fails on any.
 */
import type { RequestLogEntry } from '../test/support/fake-provider/server.ts';
import type { DirectusInstance } from '../test/support/instance.ts';
import { query, type Violation } from '../test/support/invariants.ts';

interface JobRow {
	id: number;
	pseo_id: number;
	mode: 'on_demand' | 'bulk';
	/** The provider the job ran with. */
	provider: string | null;
	status: string;
	attempts: number;
	failed_routes: { route: string; error: string }[] | null;
	routes: { route: string }[] | null;
	created_ms: string;
	completed_ms: string | null;
}

/** What the run knows it caused. */
export interface ChaosRecord {
	/** generation_id of every 202 the clients received. */
	accepted: number[];
	/** Routes the fake provider was told to fail (the only page failures the run injects). */
	failingRoutes: ReadonlySet<string>;
	/** When each SIGKILL happened, ms since the epoch. */
	killTimes: number[];
	/**
	 * Websites whose routes are unique in the whole run (the seeded plans): the fake's log names a route, not its
	 * website, so only those routes' calls can be counted per page.
	 */
	uniqueRouteSites: ReadonlySet<number>;
}

async function jobs(database: string): Promise<JobRow[]> {
	return query<JobRow>(
		database,
		// A job's routes and failures are rows of pseo_generation_routes, gathered here into the job's arrays.
		`SELECT g.id, g.pseo_id, g.mode, g.provider, g.status, g.attempts,
		        (SELECT json_agg(json_build_object('route', r.route, 'error', r.error) ORDER BY r.position)
		           FROM pseo_generation_routes r WHERE r.generation_id = g.id AND r.state = 'failed') AS failed_routes,
		        (SELECT json_agg(json_build_object('route', r.route) ORDER BY r.position)
		           FROM pseo_generation_routes r WHERE r.generation_id = g.id) AS routes,
		        (extract(epoch FROM g.date_created) * 1000)::bigint AS created_ms,
		        (extract(epoch FROM g.date_completed) * 1000)::bigint AS completed_ms
		 FROM pseo_generations g ORDER BY g.id`,
	);
}

/** The paths of a page's call, per protocol: OpenAI's chat completions, Anthropic's messages, Gemini's generateContent. */
const isModelCall = (path: string) => path === '/v1/chat/completions' || path === '/v1/messages' || /^\/v1beta\/models\/[^/]+:generateContent$/.test(path);
/** Jobs that hold their lease from start to end, writing page by page: on-demand jobs (every provider here runs bulk jobs through its batch API). */
const pageByPage = (row: JobRow) => row.mode === 'on_demand';

/** Every 202 names a job that exists and ended (completed or failed). */
function checkAccepted(record: ChaosRecord, rows: JobRow[]): Violation[] {
	const byId = new Map(rows.map((row) => [Number(row.id), row]));
	const violations: Violation[] = [];
	for (const id of record.accepted) {
		const row = byId.get(id);
		if (!row) violations.push({ invariant: 'every 202 names a stored job', detail: `generation ${id} does not exist` });
		else if (row.status !== 'completed' && row.status !== 'failed') {
			violations.push({ invariant: 'every accepted job ends', detail: `generation ${id} is ${row.status}` });
		}
	}
	return violations;
}

/** The transient faults the run injects now and then: 503s and 429s, which a page may meet on every attempt. */
const INJECTED_TRANSIENT = /\(HTTP (503|429)\)/;

/**
 * A job ends `failed` only for a reason the run injected: each of its failed routes is one the fake provider was
 * told to fail, or a page whose every attempt met one of the run's 503s or 429s. A takeover must finish a job,
 * never fail it; so any other failed route is a bug.
 */
function checkFailures(record: ChaosRecord, rows: JobRow[]): Violation[] {
	const violations: Violation[] = [];
	for (const row of rows) {
		for (const failure of row.failed_routes ?? []) {
			if (!record.failingRoutes.has(failure.route) && !INJECTED_TRANSIENT.test(failure.error)) {
				violations.push({
					invariant: 'a job fails only for an injected reason',
					detail: `generation ${row.id} (${row.status}): ${failure.route} failed with ${JSON.stringify(failure.error.slice(0, 200))}`,
				});
			}
		}
	}
	return violations;
}

/**
 * In chat mode each route is answered once by the provider. A second answer is allowed only for a takeover: a
 * kill between the first call and the last (the instance died before it stored the page, and whoever took the job
 * over asked again), or a lease its job's worker lost (it stalled past the lease on an overloaded machine). Routes
 * the run made fail are retried by design and not counted.
 */
function checkChatCalls(record: ChaosRecord, rows: JobRow[], requests: readonly RequestLogEntry[], leaseLost: ReadonlyMap<number, number>): Violation[] {
	const chatRoutes = new Map<string, number>();
	for (const row of rows) {
		if (!pageByPage(row) || !record.uniqueRouteSites.has(Number(row.pseo_id))) continue;
		for (const page of row.routes ?? []) chatRoutes.set(page.route, Number(row.id));
	}
	const answered = new Map<string, number[]>();
	for (const entry of requests) {
		if (!isModelCall(entry.path) || entry.status !== 200 || entry.task !== 'page' || !entry.route) continue;
		if (!chatRoutes.has(entry.route) || record.failingRoutes.has(entry.route)) continue;
		answered.set(entry.route, [...(answered.get(entry.route) ?? []), entry.time]);
	}
	const violations: Violation[] = [];
	for (const [route, times] of answered) {
		if (times.length < 2) continue;
		const first = Math.min(...times);
		const last = Math.max(...times);
		const takeovers = record.killTimes.filter((time) => time >= first && time <= last).length + (leaseLost.get(chatRoutes.get(route)!) ?? 0);
		if (times.length - 1 > takeovers) {
			violations.push({ invariant: 'each chat page is answered once, unless a takeover cut it off', detail: `${route}: ${times.length} answers, ${takeovers} takeover(s) between them` });
		}
	}
	return violations;
}

/**
 * No job is claimed twice outside a lease takeover. An on-demand job is claimed once, plus once per takeover: a
 * kill while it ran, or a worker that lost its lease (it logs that, naming the job). Bulk jobs in batch mode are
 * handed back and claimed again at every poll by design; their double work would show as a second provider batch,
 * which the run checks apart.
 */
function checkClaims(record: ChaosRecord, rows: JobRow[], leaseLost: ReadonlyMap<number, number>): Violation[] {
	const violations: Violation[] = [];
	for (const row of rows) {
		if (!pageByPage(row)) continue;
		const start = Number(row.created_ms) - 1000;
		const end = (row.completed_ms === null ? Date.now() : Number(row.completed_ms)) + 1000;
		const takeovers = record.killTimes.filter((time) => time >= start && time <= end).length + (leaseLost.get(Number(row.id)) ?? 0);
		if (Number(row.attempts) - 1 > takeovers) {
			violations.push({ invariant: 'no claim twice outside a lease takeover', detail: `generation ${row.id}: ${row.attempts} claims, ${takeovers} takeover(s)` });
		}
	}
	return violations;
}

/** Per job, how often a worker logged that it lost the job's lease (the job was taken over from a live worker). */
function leaseLosses(instances: readonly DirectusInstance[]): Map<number, number> {
	const losses = new Map<number, number>();
	for (const instance of instances) {
		for (const line of instance.output().split('\n')) {
			if (!/lease lost|handed over/.test(line)) continue;
			const id = /"jobId":(\d+)/.exec(line)?.[1];
			if (id) losses.set(Number(id), (losses.get(Number(id)) ?? 0) + 1);
		}
	}
	return losses;
}

/** Every reconciliation check above, against the quiet database. */
export async function reconcile(database: string, record: ChaosRecord, requests: readonly RequestLogEntry[], instances: readonly DirectusInstance[]): Promise<Violation[]> {
	const rows = await jobs(database);
	const leaseLost = leaseLosses(instances);
	return [...checkAccepted(record, rows), ...checkFailures(record, rows), ...checkChatCalls(record, rows, requests, leaseLost), ...checkClaims(record, rows, leaseLost)];
}
