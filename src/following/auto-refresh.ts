import type { PseoConfig } from '../config/config.ts';
import { refreshJob } from '../jobs/refresh-job.ts';
import { providerSourceFor } from '../provider/create-provider.ts';
import type { ServiceContext } from '../shared/services.ts';
import { claimAutoRefresh, findAutoRefreshCandidates, readAutoRefreshState, recordAutoRefresh, type AutoRefreshState } from '../websites/auto-refresh-store.ts';
import { providerPicker } from '../websites/website-provider.ts';

/*
 * Stale posts refreshed by themselves (`pseo.auto_refresh`): on each sweep, a website with the setting on, stale
 * posts and its interval passed gets a refresh job started for its owner, exactly as POST /trigger/refresh-generation
 * would start it (charged to the owner at the batch rate, the caps applied, every stale post, republished in place
 * when it ends). One instance takes each turn (auto-refresh-store.ts), and a turn is taken whether or not the job
 * could start: a job already running, a short balance or a cap defers the refresh to the next interval, with the
 * reason on the website, so that a day of small edits costs at most one batch an interval, not one per edit.
 */

/** The shortest time between two looks for due refreshes. */
const MIN_LOOK_MS = 1000;
/** Websites looked at per sweep. */
const CANDIDATES = 20;

export interface AutoRefresherOptions {
	context: ServiceContext;
	config: PseoConfig;
	/** Wakes the local job runtime once a job is accepted. */
	notify: () => void;
}

export class AutoRefresher {
	readonly #options: AutoRefresherOptions;
	#timer: NodeJS.Timeout | null = null;
	#sweeping: Promise<void> | null = null;
	#stopping = false;

	constructor(options: AutoRefresherOptions) {
		this.#options = options;
	}

	start(): void {
		if (this.#timer || this.#stopping) return;
		// A refresh starts at most once an interval (an hour by default): a look every second at most is plenty.
		this.#timer = setInterval(() => this.kick(), Math.max(MIN_LOOK_MS, this.#options.config.sweepIntervalMs));
		this.#timer.unref();
		this.kick();
	}

	kick(): void {
		if (this.#stopping || this.#sweeping) return;
		this.#sweeping = this.#sweep()
			.catch((error: unknown) => this.#options.context.logger.error({ err: error }, 'pseo: the sweep of automatic refreshes failed'))
			.finally(() => {
				this.#sweeping = null;
			});
	}

	async #sweep(): Promise<void> {
		const { context, config } = this.#options;
		const now = Date.now();
		for (const { pseoId, ownerId } of await findAutoRefreshCandidates(context.database, now, CANDIDATES)) {
			if (this.#stopping) return;
			const next = now + config.autoRefreshIntervalMs;
			if (!(await claimAutoRefresh(context.database, pseoId, now, next))) continue;
			await recordAutoRefresh(context.database, pseoId, await this.#start(pseoId, ownerId, new Date(next).toISOString()));
		}
	}

	/** Starts the website's refresh job for its owner; what became of it. */
	async #start(pseoId: number, ownerId: string, nextAt: string): Promise<AutoRefreshState> {
		const { context, config, notify } = this.#options;
		const at = new Date().toISOString();
		try {
			const pickProvider = providerPicker(context.database, providerSourceFor(config, context.logger, context));
			const job = await refreshJob({ ...context, config, pickProvider }, { userId: ownerId, pseoId, postCount: null, republish: true });
			notify();
			context.logger.info({ pseoId, jobId: job.id, pages: job.pages }, 'pseo: automatic refresh job started');
			return { last_started_at: at, last_job_id: job.id, last_pages: job.pages, deferred_at: null, deferred_reason: null, next_at: nextAt };
		} catch (error) {
			const reason = error instanceof Error ? error.message : String(error);
			const status = (error as { status?: unknown } | null)?.status;
			if (typeof status === 'number' && status < 500) context.logger.info({ pseoId, reason }, 'pseo: automatic refresh deferred to the next interval');
			else context.logger.error({ err: error, pseoId }, 'pseo: automatic refresh failed; it is tried again at the next interval');
			const previous = await previousState(context, pseoId);
			return { ...previous, deferred_at: at, deferred_reason: reason, next_at: nextAt };
		}
	}

	drain(): void {
		this.#stopping = true;
		if (this.#timer) clearInterval(this.#timer);
	}
}

/** The website's last recorded turn, kept when a turn is deferred. */
async function previousState(context: ServiceContext, pseoId: number): Promise<AutoRefreshState> {
	const empty: AutoRefreshState = { last_started_at: null, last_job_id: null, last_pages: null, deferred_at: null, deferred_reason: null, next_at: null };
	return { ...empty, ...(await readAutoRefreshState(context.database, pseoId)) };
}
