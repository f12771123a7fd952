import { Counter, Gauge, Histogram, Registry } from 'prom-client';

/*
 * The service's own figures, in the Prometheus text format (GET /pseo-endpoints/metrics). Counters count what this
 * instance did since it started, once the write that did it has committed: on several instances each reports its
 * own, and Prometheus sums them. The gauges read the shared database at each scrape, so every instance reports the
 * same value for them. Our own registry, not prom-client's global one, which Directus's own metrics may use.
 */
export const metricsRegistry = new Registry();

const registers = [metricsRegistry];

/** Jobs that ended, by mode (`on_demand`, `bulk`) and final status (`completed`, `failed`). */
export const jobsFinished = new Counter({ name: 'pseo_jobs_finished_total', help: 'Generation jobs ended, by mode and final status.', labelNames: ['mode', 'status'] as const, registers });

/** Pages stored by jobs: `created`, `regenerated` (a post rewritten) or `failed` (refunded). */
export const pagesStored = new Counter({ name: 'pseo_pages_total', help: 'Pages settled by generation jobs, by outcome: created, regenerated or failed (refunded).', labelNames: ['outcome'] as const, registers });

/** Tokens the ledger moved: `charged` or `refunded`. */
export const tokensMoved = new Counter({ name: 'pseo_tokens_total', help: 'Tokens moved by the ledger, by kind: charged or refunded.', labelNames: ['kind'] as const, registers });

/** Calls to the AI provider, each attempt counted, by kind (`chat`, `upload`, `create_batch`...) and outcome (`ok`, or the failure's reason). */
export const providerCalls = new Counter({ name: 'pseo_provider_calls_total', help: 'Attempts of calls to the AI provider, by kind and outcome (ok, or the failure reason).', labelNames: ['kind', 'outcome'] as const, registers });

/** How long provider calls took, by kind. */
export const providerLatency = new Histogram({
	name: 'pseo_provider_call_duration_seconds',
	help: 'Duration of each attempt of a call to the AI provider, by kind.',
	labelNames: ['kind'] as const,
	// From a file delete to a long page: ten seconds is a slow chat call, two minutes PSEO_PROVIDER_TIMEOUT_MS's default.
	buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 40, 80, 120],
	registers,
});

/** Online calls that waited for a slot of their provider key's rate limit, by provider kind. */
export const providerPacedCalls = new Counter({ name: 'pseo_provider_paced_calls_total', help: 'Online calls to the AI provider that waited for a slot of their key\'s rate limit, by provider.', labelNames: ['provider'] as const, registers });

/** How long paced calls waited for their slot, by provider kind. */
export const providerPaceWait = new Histogram({
	name: 'pseo_provider_pace_wait_seconds',
	help: 'Time online calls to the AI provider waited for a slot of their key\'s rate limit, by provider (calls that waited only).',
	labelNames: ['provider'] as const,
	buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300],
	registers,
});

/** Answers 429 for a rate limit (not a spent quota), by provider kind. */
export const providerRateLimited = new Counter({ name: 'pseo_provider_rate_limited_total', help: 'Calls to the AI provider answered 429 for a rate limit, by provider.', labelNames: ['provider'] as const, registers });

/** Provider batches of bulk jobs by the state they reached: `submitted`, `adopted`, `ingested`, `expired`. */
export const batchParts = new Counter({ name: 'pseo_batch_parts_total', help: 'Parts of bulk jobs by the state they reached: submitted, adopted, ingested, expired, or stopped (a part of a job that ended while it ran, settled).', labelNames: ['state'] as const, registers });

/** Jobs claimed by this instance: `claim` (pending or due), `takeover` (another worker's lease had lapsed). */
export const leaseClaims = new Counter({ name: 'pseo_lease_claims_total', help: 'Jobs claimed, by kind: claim (pending or due) or takeover (another worker\'s lease had lapsed).', labelNames: ['kind'] as const, registers });

/** Posts publications sent, by target (`wordpress`, `webhook`) and outcome (`created`, `updated`, `unchanged`, `failed`). */
export const publicationDeliveries = new Counter({ name: 'pseo_publication_deliveries_total', help: 'Posts sent by publications, by target and outcome.', labelNames: ['target', 'outcome'] as const, registers });

/** The quality gate's verdicts on stored pages: `pass`, `warn`, `fail`. */
export const qualityVerdicts = new Counter({ name: 'pseo_quality_verdicts_total', help: 'The quality gate\'s verdicts on the pages it judged.', labelNames: ['verdict'] as const, registers });

/** Figures read from the shared database at each scrape. */
export interface DatabaseFigures {
	jobsByStatus(): Promise<{ mode: string; status: string; count: number }[]>;
	jobsNeedingAttention(): Promise<number>;
	partsRunning(): Promise<number>;
	/** Each provider's batch queue: the input tokens its running parts hold, and the jobs whose next part waits for room. */
	batchQueues(): Promise<{ provider: string; enqueued: number; waiting: number }[]>;
}

let figures: DatabaseFigures | null = null;

/** Where the gauges read from; set once the extension has its database. */
export function setDatabaseFigures(source: DatabaseFigures): void {
	figures = source;
}

new Gauge({
	name: 'pseo_jobs',
	help: 'Unfinished generation jobs in the database, by mode and status (pending, running).',
	labelNames: ['mode', 'status'] as const,
	registers,
	async collect() {
		this.reset();
		for (const row of (await figures?.jobsByStatus()) ?? []) this.set({ mode: row.mode, status: row.status }, row.count);
	},
});

new Gauge({
	name: 'pseo_jobs_needing_attention',
	help: 'Unfinished jobs whose steps keep failing (their attention flag is on).',
	registers,
	async collect() {
		this.set((await figures?.jobsNeedingAttention()) ?? 0);
	},
});

new Gauge({
	name: 'pseo_batch_parts_running',
	help: 'Provider batches of bulk jobs still running at the provider.',
	registers,
	async collect() {
		this.set((await figures?.partsRunning()) ?? 0);
	},
});

new Gauge({
	name: 'pseo_batch_enqueued_tokens',
	help: 'Input tokens (estimated) that running parts of bulk jobs hold in each provider\'s batch queue, across the cluster.',
	labelNames: ['provider'] as const,
	registers,
	async collect() {
		this.reset();
		for (const queue of (await figures?.batchQueues()) ?? []) this.set({ provider: queue.provider }, queue.enqueued);
	},
});

new Gauge({
	name: 'pseo_jobs_waiting_for_capacity',
	help: 'Bulk jobs whose next part waits for room in a provider\'s batch queue, by provider.',
	labelNames: ['provider'] as const,
	registers,
	async collect() {
		this.reset();
		for (const queue of (await figures?.batchQueues()) ?? []) this.set({ provider: queue.provider }, queue.waiting);
	},
});
