/**
 * The chaos run's reconciliation of the service's own figures (GET /pseo-endpoints/metrics) and of the jobs'
 * trouble fields with the database.
 *
 * Counters live in each process and die with it, so the run scrapes every instance just before it kills it and
 * once more at the end, and sums the scrapes: one per life of an instance. A counter moves only after its write
 * has committed, so the sum never exceeds what the database holds. It may fall short only by what a victim
 * committed between its last scrape and its SIGKILL, which is bounded by the jobs it held then: the run records
 * them with each kill. The gauges read the database at each scrape, so at quiescence they equal it.
 */
import type { DirectusInstance } from '../test/support/instance.ts';
import { query, type Violation } from '../test/support/invariants.ts';
import { parsePrometheusText } from '../test/support/prometheus-text.ts';

/** The counters the run reconciles, keyed by a series' name and labels. */
export type CounterTotals = Map<string, number>;

const JOBS_FINISHED = 'pseo_jobs_finished_total';
const PAGES = 'pseo_pages_total';
const TOKENS = 'pseo_tokens_total';
const COUNTERS = new Set([JOBS_FINISHED, PAGES, TOKENS]);

const key = (name: string, labels: Record<string, string>) =>
	`${name}{${Object.entries(labels)
		.sort(([a], [b]) => a.localeCompare(b))
		.map(([label, value]) => `${label}="${value}"`)
		.join(',')}}`;

async function scrape(instance: DirectusInstance): Promise<ReturnType<typeof parsePrometheusText>> {
	const res = await fetch(`${instance.url}/pseo-endpoints/metrics`, { headers: { authorization: `Bearer ${instance.adminToken}` }, signal: AbortSignal.timeout(5000) });
	if (res.status !== 200) throw new Error(`GET /pseo-endpoints/metrics answered ${res.status}`);
	return parsePrometheusText(await res.text());
}

/** The reconciled counters of one instance's life so far, or null when it could not be scraped. */
export async function scrapeCounters(instance: DirectusInstance): Promise<CounterTotals | null> {
	try {
		const exposition = await scrape(instance);
		const totals: CounterTotals = new Map();
		for (const sample of exposition.samples) if (COUNTERS.has(sample.name)) totals.set(key(sample.name, sample.labels), sample.value);
		return totals;
	} catch {
		return null;
	}
}

/** What the run knows of the counters: a scrape per life of an instance, and what each kill may have cut off. */
export interface MetricsRecord {
	lives: CounterTotals[];
	/** Lives whose last scrape failed: their counts are missing, so only the upper bound is checked. */
	missed: number;
	/** Jobs the victims held at their kills: only they could commit between a victim's last scrape and its death. */
	heldAtKills: number[];
}

export function emptyMetricsRecord(): MetricsRecord {
	return { lives: [], missed: 0, heldAtKills: [] };
}

/** Adds one life's scrape to the record. */
export function recordLife(record: MetricsRecord, totals: CounterTotals | null): void {
	if (totals) record.lives.push(totals);
	else record.missed++;
}

/**
 * Each reconciled counter, summed over the lives, against the database: never above it, and below it by no more
 * than the jobs (and their pages) the victims held when they were killed.
 */
export async function reconcileMetrics(
	database: string,
	record: MetricsRecord,
	live: DirectusInstance | undefined,
	log: (line: string) => void,
): Promise<Violation[]> {
	const sum = (series: string) => record.lives.reduce((total, life) => total + (life.get(series) ?? 0), 0);
	const held = record.heldAtKills.length > 0
		? await query<{ jobs: number; pages: number }>(database, 'SELECT count(*)::int AS jobs, coalesce(sum(requested_count), 0)::int AS pages FROM pseo_generations WHERE id = ANY($1::int[])', [record.heldAtKills])
		: [{ jobs: 0, pages: 0 }];
	const slack = { jobs: Number(held[0]?.jobs ?? 0), pages: Number(held[0]?.pages ?? 0) };
	const checks: { series: string; database: number; slack: number | null }[] = [];

	const ended = await query<{ mode: string; status: string; n: number }>(
		database,
		`SELECT mode, status, count(*)::int AS n FROM pseo_generations WHERE status IN ('completed', 'failed') GROUP BY mode, status`,
	);
	for (const mode of ['on_demand', 'bulk']) {
		for (const status of ['completed', 'failed']) {
			const n = Number(ended.find((row) => row.mode === mode && row.status === status)?.n ?? 0);
			checks.push({ series: key(JOBS_FINISHED, { mode, status }), database: n, slack: slack.jobs });
		}
	}
	const [pages] = await query<{ created: number; failed: number; regenerated: number }>(
		database,
		`SELECT coalesce(sum(created_count) FILTER (WHERE regenerate_post_id IS NULL), 0)::int AS created,
		        coalesce(sum(created_count) FILTER (WHERE regenerate_post_id IS NOT NULL), 0)::int AS regenerated,
		        coalesce(sum(failed_count), 0)::int AS failed
		 FROM pseo_generations`,
	);
	for (const outcome of ['created', 'regenerated', 'failed'] as const) checks.push({ series: key(PAGES, { outcome }), database: Number(pages?.[outcome] ?? 0), slack: slack.pages });
	const [tokens] = await query<{ charged: number; refunded: number }>(
		database,
		`SELECT coalesce(-sum(amount) FILTER (WHERE reason = 'charge'), 0)::bigint AS charged,
		        coalesce(sum(amount) FILTER (WHERE reason = 'refund'), 0)::bigint AS refunded
		 FROM pseo_token_ledger`,
	);
	// A victim may also have been answering a trigger or a plan when it died: charges have no bound but the top.
	checks.push({ series: key(TOKENS, { kind: 'charged' }), database: Number(tokens?.charged ?? 0), slack: null });
	checks.push({ series: key(TOKENS, { kind: 'refunded' }), database: Number(tokens?.refunded ?? 0), slack: null });

	const violations: Violation[] = [];
	log(
		`metrics: ${record.lives.length} lives scraped (${record.missed} missed); counted / in the database: ${checks
			.filter((check) => check.database > 0 || sum(check.series) > 0)
			.map((check) => `${check.series} ${sum(check.series)}/${check.database}`)
			.join(', ')}`,
	);
	for (const check of checks) {
		const counted = sum(check.series);
		if (counted > check.database) {
			violations.push({ invariant: 'a counter never counts more than the database holds', detail: `${check.series}: ${counted} counted, ${check.database} in the database` });
		} else if (record.missed === 0 && check.slack !== null && check.database - counted > check.slack) {
			violations.push({
				invariant: 'a counter misses only what a kill cut off',
				detail: `${check.series}: ${counted} counted, ${check.database} in the database, at most ${check.slack} held by the victims`,
			});
		}
	}
	if (live) violations.push(...(await reconcileGauges(database, live)));
	return violations;
}

/** At quiescence the gauges, read from the database at the scrape, say what the database says. */
async function reconcileGauges(database: string, live: DirectusInstance): Promise<Violation[]> {
	const exposition = await scrape(live);
	const [row] = await query<{ unfinished: number; attention: number; parts: number }>(
		database,
		`SELECT (SELECT count(*)::int FROM pseo_generations WHERE status IN ('pending', 'running')) AS unfinished,
		        (SELECT count(*)::int FROM pseo_generations WHERE attention AND status IN ('pending', 'running')) AS attention,
		        (SELECT count(*)::int FROM pseo_generation_parts WHERE status = 'running') AS parts`,
	);
	const unfinished = exposition.samples.filter((sample) => sample.name === 'pseo_jobs').reduce((total, sample) => total + sample.value, 0);
	const violations: Violation[] = [];
	const compare = (gauge: string, scraped: number, stored: number) => {
		if (scraped !== stored) violations.push({ invariant: 'a gauge says what the database says', detail: `${gauge}: ${scraped} scraped, ${stored} in the database` });
	};
	compare('pseo_jobs', unfinished, Number(row?.unfinished ?? 0));
	compare('pseo_jobs_needing_attention', exposition.value('pseo_jobs_needing_attention'), Number(row?.attention ?? 0));
	compare('pseo_batch_parts_running', exposition.value('pseo_batch_parts_running'), Number(row?.parts ?? 0));
	return violations;
}

/**
 * The trouble fields after the run: it injects only transient faults (503s, 429s) and failing routes, which a
 * step either survives or turns into failed pages, never into a job failed for its provider. So at quiescence no
 * job needs attention, no job that ended keeps a step error, and the admins' health check counts none.
 */
export async function reconcileTrouble(database: string, live: DirectusInstance | undefined): Promise<Violation[]> {
	const rows = await query<{ id: number; status: string; attention: boolean; last_error: unknown }>(
		database,
		`SELECT id, status, attention, last_error FROM pseo_generations WHERE attention OR last_error IS NOT NULL ORDER BY id`,
	);
	const violations: Violation[] = rows.map((row) => ({
		invariant: 'no job keeps trouble once the run is quiet',
		detail: `generation ${row.id} (${row.status}): attention ${row.attention}, last_error ${JSON.stringify(row.last_error)?.slice(0, 200)}`,
	}));
	if (live) {
		const res = await fetch(`${live.url}/pseo-endpoints/`, { headers: { authorization: `Bearer ${live.adminToken}` } });
		const health = (await res.json()) as { jobs_needing_attention?: number };
		if (health.jobs_needing_attention !== rows.filter((row) => row.attention).length) {
			violations.push({ invariant: 'the health check counts the jobs needing attention', detail: `health says ${health.jobs_needing_attention}, the database ${rows.filter((row) => row.attention).length}` });
		}
	}
	return violations;
}
