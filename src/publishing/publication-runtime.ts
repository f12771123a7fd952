import { randomBytes } from 'node:crypto';
import os from 'node:os';
import type { Knex } from 'knex';
import type { PseoConfig } from '../config/config.ts';
import type { Logger } from '../shared/logger.ts';
import type { OutboundClient } from './outbound-client.ts';
import {
	claimPublication,
	findClaimablePublications,
	PublicationLeaseLostError,
	readPublication,
	recordPublicationFailure,
	releasePublication,
	renewPublicationLease,
} from './publication-store.ts';
import { runPublication, TargetUnavailableError } from './publication-runner.ts';
import { republishRefreshedPosts } from './republish.ts';
import { nextInternalError, nextTargetError, stepRetryDelay } from '../engine/step-failure.ts';

/** Publications one instance runs at once: each waits on a website far more than on this process. */
const MAX_PUBLICATIONS = 4;

/**
 * The per-instance publication runtime, beside the generation runtime and on the same schedule: it claims pending
 * publications and those whose worker died (lease lapsed), renews its leases while it works, and hands them back
 * on shutdown so another instance resumes them at once.
 */
export class PublicationRuntime {
	readonly worker = `${os.hostname()}:${process.pid}:${randomBytes(3).toString('hex')}:publish`;
	readonly #database: Knex;
	readonly #logger: Logger;
	readonly #config: PseoConfig;
	readonly #http: OutboundClient;
	readonly #instanceSecret: string | undefined;
	readonly #owned = new Map<number, { controller: AbortController; done: Promise<void> }>();
	#timer: NodeJS.Timeout | null = null;
	#sweeping: Promise<void> | null = null;
	#stopping = false;

	constructor(options: { database: Knex; logger: Logger; config: PseoConfig; http: OutboundClient; instanceSecret: string | undefined }) {
		this.#database = options.database;
		this.#logger = options.logger;
		this.#config = options.config;
		this.#http = options.http;
		this.#instanceSecret = options.instanceSecret;
	}

	start(): void {
		if (this.#timer || this.#stopping) return;
		this.#timer = setInterval(() => this.kick(), this.#config.sweepIntervalMs);
		this.#timer.unref();
		this.kick();
	}

	kick(): void {
		if (this.#stopping || this.#sweeping) return;
		this.#sweeping = this.#sweep()
			.catch((error: unknown) => this.#logger.error({ err: error }, 'pseo publication sweep failed'))
			.finally(() => {
				this.#sweeping = null;
			});
	}

	async #sweep(): Promise<void> {
		// Refresh jobs that ended owe their published posts a publication (republish.ts): queued here, claimed below.
		await republishRefreshedPosts(this.#database, this.#logger).catch((error: unknown) =>
			this.#logger.error({ err: error }, 'pseo republish of refreshed posts failed; it is tried again at the next sweep'),
		);
		const free = MAX_PUBLICATIONS - this.#owned.size;
		if (free <= 0) return;
		for (const id of await findClaimablePublications(this.#database, Date.now(), free * 2)) {
			if (this.#stopping || this.#owned.size >= MAX_PUBLICATIONS) return;
			if (this.#owned.has(id)) continue;
			if (await claimPublication(this.#database, id, this.worker, this.#config.leaseMs, this.#logger)) this.#run(id);
		}
	}

	#run(id: number): void {
		const controller = new AbortController();
		const done = this.#execute(id, controller).finally(() => {
			this.#owned.delete(id);
			this.kick();
		});
		this.#owned.set(id, { controller, done });
	}

	async #execute(id: number, controller: AbortController): Promise<void> {
		const leaseMs = this.#config.leaseMs;
		const renew = setInterval(() => {
			renewPublicationLease(this.#database, id, this.worker, leaseMs)
				.then((held) => {
					if (!held) controller.abort();
				})
				.catch((error: unknown) => this.#logger.warn({ err: error, publicationId: id }, 'pseo publication lease renewal failed'));
		}, Math.max(100, Math.floor(leaseMs / 3)));
		try {
			const publication = await readPublication(this.#database, id);
			if (!publication) return;
			await runPublication(publication, {
				database: this.#database,
				logger: this.#logger,
				config: this.#config,
				http: this.#http,
				worker: this.worker,
				signal: controller.signal,
				instanceSecret: this.#instanceSecret,
			});
		} catch (error) {
			if (this.#stopping) return;
			if (error instanceof PublicationLeaseLostError || controller.signal.aborted) {
				this.#logger.warn({ publicationId: id, worker: this.worker }, 'pseo publication handed over to another worker');
				return;
			}
			// A database fault, or a target that cannot take a takedown now: on its record, and handed back, so that a sweep
			// (here or elsewhere) resumes it from its cursor once its back-off has passed.
			if (error instanceof TargetUnavailableError) this.#logger.warn({ publicationId: id, reason: error.message }, 'pseo publication step failed at its target; it will be resumed');
			else this.#logger.error({ err: error, publicationId: id }, 'pseo publication step failed; it will be resumed');
			await this.#stepFailed(id, error).catch(() => releasePublication(this.#database, id, this.worker).catch(() => undefined));
		} finally {
			clearInterval(renew);
		}
	}

	/**
	 * Records a failed step and hands the publication back for later: after the poll interval, doubled at each failed
	 * step in a row (engine/step-failure.ts, as a job waits), so that a target that is down is not called at every sweep.
	 */
	async #stepFailed(id: number, error: unknown): Promise<void> {
		const publication = await readPublication(this.#database, id);
		if (!publication) return;
		const now = Date.now();
		const record = error instanceof TargetUnavailableError ? nextTargetError(publication.lastError, error.message, now) : nextInternalError(publication.lastError, now);
		const retryAt = now + stepRetryDelay(this.#config.batchPollIntervalMs, record.attempts);
		await recordPublicationFailure(this.#database, id, this.worker, record, retryAt);
	}

	/** Stops claiming, aborts the publications in flight and hands them back. */
	async drain(graceMs: number): Promise<void> {
		if (this.#stopping) return;
		this.#stopping = true;
		if (this.#timer) clearInterval(this.#timer);
		const held = [...this.#owned.keys()];
		const inFlight = Promise.all([...this.#owned.values()].map((entry) => entry.done));
		for (const entry of this.#owned.values()) entry.controller.abort();
		await Promise.race([inFlight, new Promise((resolve) => setTimeout(resolve, Math.min(graceMs, 5000)))]);
		for (const id of held) {
			await releasePublication(this.#database, id, this.worker).catch((error: unknown) =>
				this.#logger.warn({ err: error, publicationId: id }, 'pseo publication could not be handed back at shutdown; it resumes when its lease lapses'),
			);
		}
		this.#http.close();
	}
}

let current: PublicationRuntime | null = null;

/** The endpoint reaches the runtime the hook started through this (one module graph per bundle). */
export function setPublicationRuntime(runtime: PublicationRuntime | null): void {
	current = runtime;
}

export function kickPublications(): void {
	current?.kick();
}
