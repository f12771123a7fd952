import type { SitemapOptions } from '../sitemap/limits.ts';
import { sitemapOptionsFromEnv } from './sitemap-env.ts';
import { PROVIDER_KINDS, type ProviderKind } from '../shared/provider-kinds.ts';

type BulkMode = 'batch' | 'concurrent';

const FIGURES_MODES = ['fail', 'warn', 'off'] as const;
/** `PSEO_QUALITY_FIGURES`: a page with facts that states another figure fails (`fail`), is warned (`warn`), or is not checked (`off`). */
export type FiguresMode = (typeof FIGURES_MODES)[number];

/** Every setting of the extension, read once from the Directus env (operating contract, section 2). */
export interface PseoConfig {
	/** `OPENAI_API_KEY`; without it generation fails cleanly and refunds. */
	openaiApiKey: string | undefined;
	/** `OPENAI_BASE_URL`, any OpenAI-compatible server. Default: the SDK's (the OpenAI API). */
	openaiBaseUrl: string | undefined;
	/** `ANTHROPIC_API_KEY`: the Anthropic key, which wins over Settings → AI's. */
	anthropicApiKey: string | undefined;
	/** `ANTHROPIC_BASE_URL`. Default: the SDK's (the Anthropic API). */
	anthropicBaseUrl: string | undefined;
	/** `GEMINI_API_KEY`: the Google Gemini key, which wins over Settings → AI's. */
	geminiApiKey: string | undefined;
	/** `GOOGLE_GEMINI_BASE_URL`, the Gemini API's root without a version. Default: the SDK's (the Gemini API). */
	geminiBaseUrl: string | undefined;
	/**
	 * `PSEO_PROVIDER`: the provider of websites that name none. Unset: OpenAI when `OPENAI_API_KEY` is set, then
	 * Anthropic when `ANTHROPIC_API_KEY` is, then Google when `GEMINI_API_KEY` is, else the first provider Settings →
	 * AI has a key for.
	 */
	provider: ProviderKind | null;
	/** `PSEO_MODEL`: the model of websites that name none, with the default provider; unset, that provider's default model. */
	model: string | null;
	/** `PSEO_BULK_MODE`, default `batch`. */
	bulkMode: BulkMode;
	/** `PSEO_CONCURRENCY`, chat-completion calls in flight per instance, default 4. */
	concurrency: number;
	/** `PSEO_BATCH_POLL_INTERVAL_MS`, default 30000. */
	batchPollIntervalMs: number;
	/** `PSEO_BATCH_MAX_REQUESTS`, lines per provider batch: a larger bulk job is split into parts, default 50000. */
	batchMaxRequests: number;
	/** `PSEO_BATCH_MAX_BYTES`, bytes of JSONL per provider batch, default 190 MiB (OpenAI accepts 200 MB). */
	batchMaxBytes: number;
	/**
	 * `PSEO_BATCH_MAX_ENQUEUED_TOKENS`, per provider (`openai=2000000,anthropic=5000000`): the input tokens the parts of
	 * every instance together may hold in that provider's batch queue. A provider it does not name has its limit learnt
	 * from its refusals. Default: none named.
	 */
	batchMaxEnqueuedTokens: Partial<Record<ProviderKind, number>>;
	/**
	 * `PSEO_PROVIDER_CAPACITY_WAIT_MS`, how long a job may wait for its provider's capacity (a full batch queue, rate
	 * limits) without any progress before its remaining pages fail and are refunded, default 86400000 (24 hours).
	 */
	providerCapacityWaitMs: number;
	/** `PSEO_TOKEN_PER_PAGE`, default 10. */
	tokenPerPage: number;
	/** `PSEO_TOKEN_PER_BATCH_PAGE`, default 5. */
	tokenPerBatchPage: number;
	/** `PSEO_TOKEN_PER_MAIN_JSON`, default 20. */
	tokenPerMainJson: number;
	/** `PSEO_TOKEN_PER_IMPORTED_PAGE`, tokens per page a plan import adds, default 0. */
	tokenPerImportedPage: number;
	/** PSEO_USER_DAILY_TOKEN_CAP: the most tokens one user may spend per UTC day (charges less refunds); null for no cap. */
	userDailyTokenCap: number | null;
	/** `PSEO_PLAN_PAGES`, pages in a content plan, default 50. */
	planPages: number;
	/**
	 * `PSEO_SOURCE_SYNC_DELAY_MS`, how long the changes of a followed collection are gathered before one sync applies
	 * them, default 5000.
	 */
	sourceSyncDelayMs: number;
	/** `PSEO_AUTO_REFRESH_INTERVAL_MS`, the least time between two automatic refresh jobs of a website, default 3600000. */
	autoRefreshIntervalMs: number;
	/** `PSEO_PLAN_LOCK_MS`, after which an unfinished plan generation no longer blocks its user, default 600000. */
	planLockMs: number;
	/** `PSEO_LEASE_MS`, how long a claimed job stays owned without renewal, default 60000. */
	leaseMs: number;
	/** `PSEO_SWEEP_INTERVAL_MS`, how often an instance looks for pending, orphaned or due jobs, default 10000. */
	sweepIntervalMs: number;
	/**
	 * `PSEO_HOUSEKEEPING_INTERVAL_MS`, how often an instance deletes expired idempotency keys and looks for its files
	 * left at the provider, default 3600000.
	 */
	housekeepingIntervalMs: number;
	/** `PSEO_SHUTDOWN_GRACE_MS`, how long in-flight pages may finish on SIGTERM, default 10000. */
	shutdownGraceMs: number;
	/** `PSEO_PROVIDER_TIMEOUT_MS`, per provider call, default 120000. */
	providerTimeoutMs: number;
	/** `PSEO_PROVIDER_MAX_ATTEMPTS`, attempts per page or plan call before it counts as failed, default 4. */
	providerMaxAttempts: number;
	/** `PSEO_PROVIDER_BACKOFF_MS`, first wait between attempts (doubling, capped at 30 s), default 1000. */
	providerBackoffMs: number;
	/**
	 * `PSEO_PROVIDER_MAX_STEP_FAILURES`, consecutive failed steps of a job, each refused by the provider in a way a
	 * retry cannot mend (400, 404, 422, an unknown model, a refused batch create), after which the job fails and
	 * refunds what it has not created; default 5.
	 */
	providerMaxStepFailures: number;
	/** `PSEO_METRICS_TOKEN`: the static token of the Directus user that may read GET /metrics besides admins; none by default. */
	metricsToken: string | undefined;
	/** `PSEO_AUTH_FAILURE_GRACE_MS`, how long a job's steps refused with 401 or 403 keep being retried, so that a key can be rotated, default 3600000. */
	authFailureGraceMs: number;
	/**
	 * The pacing of online provider calls: `PSEO_PROVIDER_RPM` and `PSEO_PROVIDER_TPM`, requests and input tokens per
	 * minute that every instance together may send with one key and model, either one number for every provider or
	 * per provider (`openai=500,anthropic=50`); a provider without one is paced to the limits its answers' headers
	 * state, or, without those, to what its 429s teach. `PSEO_PROVIDER_RATE_WAIT_MS`, how long one call may wait for
	 * the limit in all (slots, and the waits its 429s ask for) before its page is handed back for a later step,
	 * default 300000.
	 */
	pacing: {
		requestsPerMinute: Partial<Record<ProviderKind, number>>;
		tokensPerMinute: Partial<Record<ProviderKind, number>>;
		rateWaitMs: number;
	};
	/**
	 * Directus's own Redis (`REDIS`, or `REDIS_HOST`, `REDIS_PORT`, `REDIS_USERNAME`, `REDIS_PASSWORD`, `REDIS_DB`...;
	 * `REDIS_ENABLED` decides when set), as Directus connects to it: the instances share their provider pacing
	 * through it. Null when Directus has none: they share it through the database.
	 */
	redis: string | Record<string, unknown> | null;
	/**
	 * The quality gate: `PSEO_QUALITY_MIN_WORDS` (default 300), `PSEO_QUALITY_MAX_SIMILARITY` (default 0.8) and
	 * `PSEO_QUALITY_FIGURES` (`fail`, the default, `warn` or `off`: what a page with facts that states a figure
	 * they do not give gets).
	 */
	quality: { minWords: number; maxSimilarity: number; figures: FiguresMode };
	/** `PSEO_PLAN_SITEMAP_BUDGET_MS`, how long a plan request may spend reading the website's sitemap, default 8000. */
	planSitemapBudgetMs: number;
	/** Limits of the sitemap reader (`PSEO_SITEMAP_*`, `PSEO_ALLOW_PRIVATE_NETWORKS`). */
	sitemap: SitemapOptions;
	/** Publishing to websites (WordPress, webhooks). */
	publishing: {
		/** `PSEO_PUBLISH_TIMEOUT_MS`, per request to a website, default 30000. */
		timeoutMs: number;
		/** `PSEO_PUBLISH_MAX_ATTEMPTS`, attempts per request on 429, 5xx or no answer (and per webhook delivery), default 5. */
		maxAttempts: number;
		/** `PSEO_PUBLISH_BACKOFF_MS`, first wait between attempts (doubling, capped at 30 s), default 1000. */
		backoffMs: number;
	};
	/**
	 * Whether progress is announced to Directus (shared/item-events.ts): Directus's own `WEBSOCKETS_ENABLED` with
	 * `WEBSOCKETS_REST_ENABLED` (default on), the subscriptions the announcements feed.
	 */
	announceChanges: boolean;
}

type Env = Record<string, unknown>;

/** Reads, casts and validates the configuration; a bad value throws a TypeError naming the variable. */
export function readConfig(env: Env): PseoConfig {
	return {
		openaiApiKey: optionalString(env, 'OPENAI_API_KEY'),
		openaiBaseUrl: optionalUrl(env, 'OPENAI_BASE_URL'),
		anthropicApiKey: optionalString(env, 'ANTHROPIC_API_KEY'),
		anthropicBaseUrl: optionalUrl(env, 'ANTHROPIC_BASE_URL'),
		geminiApiKey: optionalString(env, 'GEMINI_API_KEY'),
		geminiBaseUrl: optionalUrl(env, 'GOOGLE_GEMINI_BASE_URL'),
		provider: raw(env, 'PSEO_PROVIDER') === undefined ? null : oneOf(env, 'PSEO_PROVIDER', PROVIDER_KINDS, 'openai'),
		model: optionalString(env, 'PSEO_MODEL') ?? null,
		bulkMode: oneOf(env, 'PSEO_BULK_MODE', ['batch', 'concurrent'] as const, 'batch'),
		concurrency: int(env, 'PSEO_CONCURRENCY', 4, 1),
		batchPollIntervalMs: int(env, 'PSEO_BATCH_POLL_INTERVAL_MS', 30_000, 10),
		batchMaxRequests: int(env, 'PSEO_BATCH_MAX_REQUESTS', 50_000, 1),
		batchMaxBytes: int(env, 'PSEO_BATCH_MAX_BYTES', 190 * 1024 * 1024, 1024),
		batchMaxEnqueuedTokens: perProvider(env, 'PSEO_BATCH_MAX_ENQUEUED_TOKENS'),
		providerCapacityWaitMs: int(env, 'PSEO_PROVIDER_CAPACITY_WAIT_MS', 86_400_000, 100),
		tokenPerPage: int(env, 'PSEO_TOKEN_PER_PAGE', 10, 0),
		tokenPerBatchPage: int(env, 'PSEO_TOKEN_PER_BATCH_PAGE', 5, 0),
		tokenPerMainJson: int(env, 'PSEO_TOKEN_PER_MAIN_JSON', 20, 0),
		tokenPerImportedPage: int(env, 'PSEO_TOKEN_PER_IMPORTED_PAGE', 0, 0),
		userDailyTokenCap: raw(env, 'PSEO_USER_DAILY_TOKEN_CAP') === undefined ? null : int(env, 'PSEO_USER_DAILY_TOKEN_CAP', 0, 0),
		planPages: int(env, 'PSEO_PLAN_PAGES', 50, 1),
		planLockMs: int(env, 'PSEO_PLAN_LOCK_MS', 600_000, 1000),
		sourceSyncDelayMs: int(env, 'PSEO_SOURCE_SYNC_DELAY_MS', 5000, 0),
		autoRefreshIntervalMs: int(env, 'PSEO_AUTO_REFRESH_INTERVAL_MS', 3_600_000, 1000),
		leaseMs: int(env, 'PSEO_LEASE_MS', 60_000, 500),
		sweepIntervalMs: int(env, 'PSEO_SWEEP_INTERVAL_MS', 10_000, 50),
		housekeepingIntervalMs: int(env, 'PSEO_HOUSEKEEPING_INTERVAL_MS', 3_600_000, 100),
		shutdownGraceMs: int(env, 'PSEO_SHUTDOWN_GRACE_MS', 10_000, 0),
		providerTimeoutMs: int(env, 'PSEO_PROVIDER_TIMEOUT_MS', 120_000, 100),
		providerMaxAttempts: int(env, 'PSEO_PROVIDER_MAX_ATTEMPTS', 4, 1),
		providerBackoffMs: int(env, 'PSEO_PROVIDER_BACKOFF_MS', 1000, 0),
		planSitemapBudgetMs: int(env, 'PSEO_PLAN_SITEMAP_BUDGET_MS', 8000, 0),
		providerMaxStepFailures: int(env, 'PSEO_PROVIDER_MAX_STEP_FAILURES', 5, 1),
		authFailureGraceMs: int(env, 'PSEO_AUTH_FAILURE_GRACE_MS', 3_600_000, 0),
		pacing: {
			requestsPerMinute: perProvider(env, 'PSEO_PROVIDER_RPM'),
			tokensPerMinute: perProvider(env, 'PSEO_PROVIDER_TPM'),
			rateWaitMs: int(env, 'PSEO_PROVIDER_RATE_WAIT_MS', 300_000, 0),
		},
		redis: redisConnection(env),
		metricsToken: secretString(env, 'PSEO_METRICS_TOKEN', 16),
		quality: {
			minWords: int(env, 'PSEO_QUALITY_MIN_WORDS', 300, 0),
			maxSimilarity: fraction(env, 'PSEO_QUALITY_MAX_SIMILARITY', 0.8),
			figures: oneOf(env, 'PSEO_QUALITY_FIGURES', FIGURES_MODES, 'fail'),
		},
		announceChanges: directusFlag(env, 'WEBSOCKETS_ENABLED', false) && directusFlag(env, 'WEBSOCKETS_REST_ENABLED', true),
		sitemap: sitemapOptionsFromEnv(env),
		publishing: {
			timeoutMs: int(env, 'PSEO_PUBLISH_TIMEOUT_MS', 30_000, 100),
			maxAttempts: int(env, 'PSEO_PUBLISH_MAX_ATTEMPTS', 5, 1),
			backoffMs: int(env, 'PSEO_PUBLISH_BACKOFF_MS', 1000, 0),
		},
	};
}

const cache = new WeakMap<Env, PseoConfig>();

/** The configuration for a Directus env object, parsed on first use and cached. */
export function useConfig(env: Env): PseoConfig {
	let config = cache.get(env);
	if (!config) {
		config = readConfig(env);
		cache.set(env, config);
	}
	return config;
}

function raw(env: Env, name: string): unknown {
	const value = env[name];
	return value === '' ? undefined : value;
}

/** One of Directus's own boolean settings, which Directus has validated already: a boolean, or its string. */
function directusFlag(env: Env, name: string, fallback: boolean): boolean {
	const value = raw(env, name);
	return value === undefined ? fallback : value === true || String(value).toLowerCase() === 'true';
}

function optionalString(env: Env, name: string): string | undefined {
	const value = raw(env, name);
	if (value === undefined || value === null) return undefined;
	if (typeof value !== 'string' && typeof value !== 'number') {
		throw new TypeError(`${name} must be a string, received ${JSON.stringify(value)}`);
	}
	return String(value);
}

/** A secret: at least `minLength` characters, so that it cannot be guessed; its value is never echoed. */
function secretString(env: Env, name: string, minLength: number): string | undefined {
	const value = optionalString(env, name);
	if (value !== undefined && value.trim().length < minLength) throw new TypeError(`${name} must be at least ${minLength} characters, received ${JSON.stringify(value.replace(/./g, '*'))}`);
	return value?.trim();
}

function optionalUrl(env: Env, name: string): string | undefined {
	const value = optionalString(env, name);
	if (value === undefined) return undefined;
	if (!URL.canParse(value) || !/^https?:$/.test(new URL(value).protocol)) {
		throw new TypeError(`${name} must be an http(s) URL, received ${JSON.stringify(value)}`);
	}
	return value;
}

function int(env: Env, name: string, fallback: number, min: number): number {
	const value = raw(env, name);
	if (value === undefined || value === null) return fallback;
	const parsed = typeof value === 'number' ? value : typeof value === 'string' && /^\s*-?\d+\s*$/.test(value) ? Number(value) : NaN;
	if (!Number.isSafeInteger(parsed) || parsed < min) {
		throw new TypeError(`${name} must be an integer >= ${min}, received ${JSON.stringify(value)}`);
	}
	return parsed;
}

/**
 * A limit per provider: one positive integer for every provider, or `provider=amount` pairs separated by commas, each
 * provider once (`openai=2000000,anthropic=500000`); a provider not named has none.
 */
function perProvider(env: Env, name: string): Partial<Record<ProviderKind, number>> {
	const value = optionalString(env, name)?.trim();
	if (value === undefined || value === '') return {};
	const fail = () => {
		throw new TypeError(`${name} must be a positive integer, or provider=integer pairs separated by commas (providers: ${PROVIDER_KINDS.join(', ')}; each once), received ${JSON.stringify(value)}`);
	};
	if (/^\d+$/.test(value)) {
		const amount = Number(value);
		if (!Number.isSafeInteger(amount) || amount < 1) fail();
		return Object.fromEntries(PROVIDER_KINDS.map((kind) => [kind, amount]));
	}
	const out: Partial<Record<ProviderKind, number>> = {};
	for (const entry of value.split(',')) {
		const match = /^\s*([a-z_]+)\s*=\s*(\d+)\s*$/.exec(entry);
		const kind = match?.[1];
		const amount = Number(match?.[2]);
		if (!kind || !(PROVIDER_KINDS as readonly string[]).includes(kind) || kind in out || !Number.isSafeInteger(amount) || amount < 1) fail();
		out[kind as ProviderKind] = amount;
	}
	return out;
}

/** Directus's names that configure its own Redis client but are not connection options. */
const REDIS_NOT_OPTIONS = /^REDIS_(ENABLED|.*_NAMESPACE)$/;

/**
 * Directus's Redis connection, read as Directus reads it (`redis-config-available`, `create-redis` in
 * @directus/api): configured when `REDIS_ENABLED` is true, or, without it, when `REDIS` or any `REDIS_*` is set;
 * `REDIS` is a connection string, else the `REDIS_*` variables are ioredis options (`REDIS_HOST` → `host`).
 */
function redisConnection(env: Env): string | Record<string, unknown> | null {
	const enabled = raw(env, 'REDIS_ENABLED');
	const names = Object.keys(env).filter((name) => name.startsWith('REDIS_') && !REDIS_NOT_OPTIONS.test(name) && raw(env, name) !== undefined);
	const configured = enabled !== undefined ? directusFlag(env, 'REDIS_ENABLED', false) : 'REDIS' in env || Object.keys(env).some((name) => name.startsWith('REDIS_'));
	if (!configured) return null;
	const url = optionalString(env, 'REDIS');
	if (url !== undefined) return url;
	const options: Record<string, unknown> = {};
	for (const name of names) {
		if (name.includes('__')) continue;
		const option = name.slice('REDIS_'.length).toLowerCase().replace(/_([a-z0-9])/g, (_, letter: string) => letter.toUpperCase());
		const value = env[name];
		options[option] = typeof value === 'string' && /^\d+$/.test(value) ? Number(value) : value;
	}
	return options;
}

/** A number from 0 to 1. */
function fraction(env: Env, name: string, fallback: number): number {
	const value = raw(env, name);
	if (value === undefined || value === null) return fallback;
	const parsed = typeof value === 'number' ? value : typeof value === 'string' && /^\s*\d*\.?\d+\s*$/.test(value) ? Number(value) : NaN;
	if (!(parsed >= 0 && parsed <= 1)) throw new TypeError(`${name} must be a number from 0 to 1, received ${JSON.stringify(value)}`);
	return parsed;
}

function oneOf<T extends string>(env: Env, name: string, allowed: readonly T[], fallback: T): T {
	const value = raw(env, name);
	if (value === undefined || value === null) return fallback;
	if (typeof value === 'string' && (allowed as readonly string[]).includes(value)) return value as T;
	throw new TypeError(`${name} must be one of ${allowed.join(', ')}, received ${JSON.stringify(value)}`);
}
