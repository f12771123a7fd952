import { describe, expect, it } from 'vitest';
import { readConfig, useConfig } from './config.ts';

const escape = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

describe('readConfig', () => {
	it('gives the documented defaults for an empty env (operating contract section 2)', () => {
		const config = readConfig({});
		expect(config).toMatchObject({
			openaiApiKey: undefined,
			openaiBaseUrl: undefined,
			model: null,
			provider: null,
			anthropicApiKey: undefined,
			anthropicBaseUrl: undefined,
			geminiApiKey: undefined,
			geminiBaseUrl: undefined,
			bulkMode: 'batch',
			concurrency: 4,
			batchPollIntervalMs: 30_000,
			tokenPerPage: 10,
			tokenPerBatchPage: 5,
			tokenPerMainJson: 20,
			tokenPerImportedPage: 0,
			planPages: 50,
			planLockMs: 600_000,
			leaseMs: 60_000,
			sweepIntervalMs: 10_000,
			housekeepingIntervalMs: 3_600_000,
			shutdownGraceMs: 10_000,
			providerTimeoutMs: 120_000,
			providerMaxAttempts: 4,
			providerBackoffMs: 1000,
			planSitemapBudgetMs: 8000,
			providerMaxStepFailures: 5,
			authFailureGraceMs: 3_600_000,
			userDailyTokenCap: null,
			quality: { minWords: 300, maxSimilarity: 0.8 },
			batchMaxEnqueuedTokens: {},
			providerCapacityWaitMs: 86_400_000,
		});
		expect(config.sitemap.allowPrivateNetworks).toBe(false);
		expect(config.announceChanges).toBe(false);
	});

	it('reads the batch queue limits per provider', () => {
		expect(readConfig({ PSEO_BATCH_MAX_ENQUEUED_TOKENS: 'openai=2000000, anthropic = 500000' }).batchMaxEnqueuedTokens).toEqual({ openai: 2_000_000, anthropic: 500_000 });
		expect(readConfig({ PSEO_BATCH_MAX_ENQUEUED_TOKENS: '' }).batchMaxEnqueuedTokens).toEqual({});
		// One number is every provider's.
		expect(readConfig({ PSEO_BATCH_MAX_ENQUEUED_TOKENS: '90000' }).batchMaxEnqueuedTokens).toEqual({ openai: 90_000, anthropic: 90_000, google: 90_000, openai_compatible: 90_000 });
	});

	it('reads the pacing limits for every provider, or per provider, and the rate wait', () => {
		expect(readConfig({}).pacing).toEqual({ requestsPerMinute: {}, tokensPerMinute: {}, rateWaitMs: 300_000 });
		expect(readConfig({ PSEO_PROVIDER_RPM: '500', PSEO_PROVIDER_TPM: 'anthropic=30000, google=1000000', PSEO_PROVIDER_RATE_WAIT_MS: 0 }).pacing).toEqual({
			requestsPerMinute: { openai: 500, anthropic: 500, google: 500, openai_compatible: 500 },
			tokensPerMinute: { anthropic: 30_000, google: 1_000_000 },
			rateWaitMs: 0,
		});
	});

	it('reads Directus\'s Redis as Directus does: REDIS, or the REDIS_* options, unless REDIS_ENABLED is false', () => {
		expect(readConfig({}).redis).toBeNull();
		expect(readConfig({ REDIS: 'redis://cache:6379/2' }).redis).toBe('redis://cache:6379/2');
		expect(readConfig({ REDIS_HOST: 'cache', REDIS_PORT: '6380', REDIS_PASSWORD: 'pw', REDIS_BUS_NAMESPACE: 'bus' }).redis).toEqual({ host: 'cache', port: 6380, password: 'pw' });
		expect(readConfig({ REDIS: 'redis://cache:6379', REDIS_ENABLED: false }).redis).toBeNull();
		expect(readConfig({ REDIS_ENABLED: 'true' }).redis).toEqual({});
	});

	it('announces changes only with Directus\'s WebSockets and their REST subscriptions on', () => {
		expect(readConfig({ WEBSOCKETS_ENABLED: 'true' }).announceChanges).toBe(true);
		expect(readConfig({ WEBSOCKETS_ENABLED: true, WEBSOCKETS_REST_ENABLED: false }).announceChanges).toBe(false);
		expect(readConfig({ WEBSOCKETS_ENABLED: 'TRUE', WEBSOCKETS_REST_ENABLED: 'true' }).announceChanges).toBe(true);
		expect(readConfig({ WEBSOCKETS_ENABLED: 'false' }).announceChanges).toBe(false);
	});

	it('reads strings and numbers as Directus passes them, and treats an empty value as unset', () => {
		const config = readConfig({
			OPENAI_API_KEY: 'sk-test',
			OPENAI_BASE_URL: 'http://127.0.0.1:4000/v1',
			PSEO_MODEL: 'my-model',
			PSEO_BULK_MODE: 'concurrent',
			PSEO_CONCURRENCY: 8,
			PSEO_TOKEN_PER_PAGE: '0',
			PSEO_LEASE_MS: ' 5000 ',
			PSEO_SWEEP_INTERVAL_MS: '',
			PSEO_ALLOW_PRIVATE_NETWORKS: 'true',
			PSEO_USER_DAILY_TOKEN_CAP: '500',
			PSEO_QUALITY_MIN_WORDS: '0',
			PSEO_QUALITY_MAX_SIMILARITY: ' .65 ',
			PSEO_QUALITY_FIGURES: 'warn',
		});
		expect(config).toMatchObject({
			openaiApiKey: 'sk-test',
			openaiBaseUrl: 'http://127.0.0.1:4000/v1',
			model: 'my-model',
			bulkMode: 'concurrent',
			concurrency: 8,
			tokenPerPage: 0,
			leaseMs: 5000,
			sweepIntervalMs: 10_000,
			userDailyTokenCap: 500,
			quality: { minWords: 0, maxSimilarity: 0.65, figures: 'warn' },
		});
		expect(config.sitemap.allowPrivateNetworks).toBe(true);
	});

	// Every variable the extension reads, with values that must stop start-up.
	const BAD: [string, unknown][] = [
		['OPENAI_API_KEY', { key: 1 }],
		['OPENAI_BASE_URL', 'not a url'],
		['OPENAI_BASE_URL', 'ftp://127.0.0.1/v1'],
		['PSEO_MODEL', ['gpt']],
		['PSEO_PROVIDER', 'claude'],
		['ANTHROPIC_API_KEY', { key: 1 }],
		['ANTHROPIC_BASE_URL', 'not a url'],
		['GEMINI_API_KEY', { key: 1 }],
		['GOOGLE_GEMINI_BASE_URL', 'not a url'],
		['PSEO_BULK_MODE', 'sometimes'],
		['PSEO_CONCURRENCY', '0'],
		['PSEO_CONCURRENCY', 'four'],
		['PSEO_CONCURRENCY', '2.5'],
		['PSEO_BATCH_POLL_INTERVAL_MS', '5'],
		['PSEO_BATCH_MAX_REQUESTS', '0'],
		['PSEO_BATCH_MAX_BYTES', '100'],
		['PSEO_BATCH_MAX_ENQUEUED_TOKENS', '-1'],
		['PSEO_BATCH_MAX_ENQUEUED_TOKENS', 'openai=0'],
		['PSEO_BATCH_MAX_ENQUEUED_TOKENS', 'mistral=1000'],
		['PSEO_BATCH_MAX_ENQUEUED_TOKENS', 'openai=1000,openai=2000'],
		['PSEO_PROVIDER_CAPACITY_WAIT_MS', '10'],
		['PSEO_TOKEN_PER_PAGE', '-1'],
		['PSEO_TOKEN_PER_BATCH_PAGE', '1e3'],
		['PSEO_TOKEN_PER_MAIN_JSON', 'twenty'],
		['PSEO_TOKEN_PER_IMPORTED_PAGE', '-2'],
		['PSEO_USER_DAILY_TOKEN_CAP', '-1'],
		['PSEO_USER_DAILY_TOKEN_CAP', 'lots'],
		['PSEO_PLAN_PAGES', '0'],
		['PSEO_PLAN_LOCK_MS', '10'],
		['PSEO_SOURCE_SYNC_DELAY_MS', '-1'],
		['PSEO_AUTO_REFRESH_INTERVAL_MS', '999'],
		['PSEO_LEASE_MS', '100'],
		['PSEO_SWEEP_INTERVAL_MS', '1'],
		['PSEO_HOUSEKEEPING_INTERVAL_MS', '10'],
		['PSEO_SHUTDOWN_GRACE_MS', '-5'],
		['PSEO_PROVIDER_TIMEOUT_MS', '99'],
		['PSEO_PROVIDER_MAX_ATTEMPTS', '0'],
		['PSEO_PROVIDER_BACKOFF_MS', 'soon'],
		['PSEO_PROVIDER_RPM', '0'],
		['PSEO_PROVIDER_RPM', 'openai=500,openai=20'],
		['PSEO_PROVIDER_RPM', 'mistral=5'],
		['PSEO_PROVIDER_TPM', '1.5'],
		['PSEO_PROVIDER_TPM', 'anthropic:30000'],
		['PSEO_PROVIDER_RATE_WAIT_MS', '-1'],
		['PSEO_PROVIDER_MAX_STEP_FAILURES', '0'],
		['PSEO_AUTH_FAILURE_GRACE_MS', 'an hour'],
		['PSEO_METRICS_TOKEN', 'short'],
		['PSEO_PUBLISH_TIMEOUT_MS', '50'],
		['PSEO_PUBLISH_MAX_ATTEMPTS', '0'],
		['PSEO_PUBLISH_BACKOFF_MS', '-5'],
		['PSEO_PLAN_SITEMAP_BUDGET_MS', '-1'],
		['PSEO_QUALITY_MIN_WORDS', '-1'],
		['PSEO_QUALITY_MAX_SIMILARITY', '1.5'],
		['PSEO_QUALITY_MAX_SIMILARITY', '80%'],
		['PSEO_QUALITY_FIGURES', 'strict'],
		['PSEO_ALLOW_PRIVATE_NETWORKS', 'yes'],
		['PSEO_SITEMAP_REQUEST_TIMEOUT_MS', '0'],
		['PSEO_SITEMAP_TOTAL_TIMEOUT_MS', 'x'],
		['PSEO_SITEMAP_MAX_BYTES', '0'],
		['PSEO_SITEMAP_MAX_URLS_PER_DOCUMENT', '0'],
		['PSEO_SITEMAP_MAX_URLS', '-1'],
		['PSEO_SITEMAP_MAX_CHILDREN', '-1'],
		['PSEO_SITEMAP_MAX_DEPTH', '11'],
		['PSEO_SITEMAP_CONCURRENCY', '0'],
		['PSEO_SITEMAP_MAX_REDIRECTS', '6'],
		['PSEO_SITEMAP_USER_AGENT', 'two\nlines'],
	];

	/** Secrets are named but masked in the message: a start-up log must not hold them. */
	const SECRETS = new Set(['PSEO_METRICS_TOKEN']);

	it.each(BAD)('a bad %s (%j) throws a TypeError naming the variable and the value', (name, value) => {
		expect(() => readConfig({ [name]: value })).toThrow(TypeError);
		const shown = SECRETS.has(name) ? JSON.stringify('*'.repeat(String(value).length)) : JSON.stringify(value);
		expect(() => readConfig({ [name]: value })).toThrow(new RegExp(`^${escape(name)} .*${escape(shown)}`));
		if (SECRETS.has(name)) expect(() => readConfig({ [name]: value })).not.toThrow(new RegExp(escape(String(value))));
	});

	it('the list above and the table of docs/configuration.md name the same variables', async () => {
		const { readFileSync } = await import('node:fs');
		const reference = readFileSync(new URL('../../docs/configuration.md', import.meta.url), 'utf8');
		const documented = new Set([...reference.matchAll(/^\| `((?:PSEO|OPENAI|ANTHROPIC|GEMINI|GOOGLE)_[A-Z_]+)` \|/gm)].map((match) => match[1]));
		expect(documented.size).toBeGreaterThan(20);
		expect([...documented].filter((name) => !BAD.some(([bad]) => bad === name))).toEqual([]);
		// And the other way: every variable the extension reads is documented there.
		expect(BAD.map(([name]) => name).filter((name) => !documented.has(name))).toEqual([]);
	});
});

describe('useConfig', () => {
	it('parses an env once and caches it', () => {
		const env = { PSEO_CONCURRENCY: '3' };
		expect(useConfig(env)).toBe(useConfig(env));
		expect(useConfig(env).concurrency).toBe(3);
	});

	it('throws on the first use of a bad env, which is start-up (the hook reads it in init app.before)', () => {
		expect(() => useConfig({ PSEO_LEASE_MS: 'soon' })).toThrow(/PSEO_LEASE_MS/);
	});
});
