import { randomBytes } from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startFakeProvider, type FakeProvider } from './support/fake-provider/server.ts';
import { call, createUser, expectEnvelope, waitForJob } from './support/api.ts';
import { startDirectus, type DirectusInstance } from './support/directus.ts';
import { plannedSite } from './support/job-checks.ts';
import { LEGS, legAvailable } from './support/legs.ts';
import { parsePrometheusText, type Exposition } from './support/prometheus-text.ts';

/*
 * GET /pseo-endpoints/metrics (docs/deployment.md, monitoring): the Prometheus text format, for admins and the
 * monitoring user of PSEO_METRICS_TOKEN only, whose counters move by exactly the work a test did.
 */

const METRICS = '/pseo-endpoints/metrics';
const METRICS_TOKEN = `metrics-${randomBytes(12).toString('hex')}`;
const PAGE_RATE = 10;
const BATCH_RATE = 5;

describe.each(LEGS)('metrics on %s', (leg) => {
	describe.skipIf(!legAvailable(leg))(`${leg}`, () => {
		let fake: FakeProvider;
		let directus: DirectusInstance;

		beforeAll(async () => {
			fake = await startFakeProvider();
			directus = await startDirectus({
				leg,
				env: { OPENAI_BASE_URL: fake.url, PSEO_METRICS_TOKEN: METRICS_TOKEN, PSEO_PROVIDER_BACKOFF_MS: '20', PSEO_PROVIDER_MAX_ATTEMPTS: '2', PSEO_BATCH_POLL_INTERVAL_MS: '100' },
			});
			// The monitoring user: no role, only the static token Prometheus sends.
			const monitor = await call(directus, 'POST', '/users', {
				token: directus.adminToken,
				body: { email: `monitor-${randomBytes(4).toString('hex')}@example.com`, status: 'active', token: METRICS_TOKEN },
			});
			expect(monitor.status).toBe(200);
		});
		afterEach(() => fake.reset());
		afterAll(async () => {
			await directus?.dispose();
			await fake?.close();
		});

		async function scrape(token = directus.adminToken): Promise<Exposition> {
			const res = await call(directus, 'GET', METRICS, { token });
			expect(res.status).toBe(200);
			// The exposition format's media type and version, whatever the order of its parameters.
			expect(res.headers.get('content-type')).toMatch(/^text\/plain;/);
			expect(res.headers.get('content-type')).toContain('version=0.0.4');
			return parsePrometheusText(res.body as string);
		}

		it('answers admins and the monitoring user in the Prometheus text format, and refuses anonymous and other callers', async () => {
			expectEnvelope(await call(directus, 'GET', METRICS), 401);
			const user = await createUser(directus, { balance: 10 });
			expect(expectEnvelope(await call(directus, 'GET', METRICS, { token: user.token }), 403).error).toMatch(/PSEO_METRICS_TOKEN/);
			const byAdmin = await scrape();
			const byMonitor = await scrape(METRICS_TOKEN);
			for (const family of ['pseo_jobs_finished_total', 'pseo_pages_total', 'pseo_tokens_total', 'pseo_provider_calls_total', 'pseo_lease_claims_total', 'pseo_batch_parts_total', 'pseo_publication_deliveries_total', 'pseo_quality_verdicts_total', 'pseo_jobs_needing_attention']) {
				expect(byAdmin.types.has(family), family).toBe(true);
				expect(byMonitor.types.has(family), family).toBe(true);
			}
			expect(byAdmin.types.get('pseo_provider_call_duration_seconds')).toBe('histogram');
		});

		it('its counters move by exactly the work done: jobs, pages, tokens charged and refunded, provider calls, parts and verdicts', async () => {
			const user = await createUser(directus, { balance: 1000 });
			const bulkSite = await plannedSite(directus, user, 3);
			const chatSite = await plannedSite(directus, user, 2);
			const before = await scrape();

			const bulk = await call(directus, 'POST', '/pseo-endpoints/trigger/bulk-generation', { token: user.token, body: { pseo_id: bulkSite.pseoId, post_count: 3 } });
			expect((await waitForJob(directus, user, bulk.body.generation_id)).status).toBe('completed');
			// An on-demand page the provider keeps refusing: it fails, and is refunded.
			fake.configure({ failRoutes: { [chatSite.routes[0]!]: 'error' } });
			const failing = await call(directus, 'POST', '/pseo-endpoints/trigger/on-demand-generation', { token: user.token, body: { pseo_id: chatSite.pseoId, post_count: 1 } });
			expect((await waitForJob(directus, user, failing.body.generation_id)).status).toBe('failed');

			const after = await scrape();
			const moved = (name: string, labels: Record<string, string> = {}) => after.value(name, labels) - before.value(name, labels);
			expect(moved('pseo_jobs_finished_total', { mode: 'bulk', status: 'completed' })).toBe(1);
			expect(moved('pseo_jobs_finished_total', { mode: 'on_demand', status: 'failed' })).toBe(1);
			expect(moved('pseo_pages_total', { outcome: 'created' })).toBe(3);
			expect(moved('pseo_pages_total', { outcome: 'failed' })).toBe(1);
			expect(moved('pseo_tokens_total', { kind: 'charged' })).toBe(3 * BATCH_RATE + PAGE_RATE);
			expect(moved('pseo_tokens_total', { kind: 'refunded' })).toBe(PAGE_RATE);
			expect(moved('pseo_batch_parts_total', { state: 'submitted' })).toBe(1);
			expect(moved('pseo_batch_parts_total', { state: 'ingested' })).toBe(1);
			expect(moved('pseo_provider_calls_total', { kind: 'create_batch', outcome: 'ok' })).toBe(1);
			expect(moved('pseo_provider_calls_total', { kind: 'upload', outcome: 'ok' })).toBe(1);
			// PSEO_PROVIDER_MAX_ATTEMPTS=2: the refused page was asked twice, each attempt counted with its reason.
			const chatFailures = (exposition: Exposition) =>
				exposition.samples
					.filter((sample) => sample.name === 'pseo_provider_calls_total' && sample.labels['kind'] === 'chat' && sample.labels['outcome'] !== 'ok')
					.reduce((sum, sample) => sum + sample.value, 0);
			expect(chatFailures(after) - chatFailures(before)).toBe(2);
			expect(moved('pseo_provider_call_duration_seconds_count', { kind: 'create_batch' })).toBe(1);
			expect(moved('pseo_lease_claims_total', { kind: 'claim' })).toBeGreaterThanOrEqual(2);
			expect(moved('pseo_lease_claims_total', { kind: 'takeover' })).toBe(0);
			const verdicts = ['pass', 'warn', 'fail'].reduce((sum, verdict) => sum + moved('pseo_quality_verdicts_total', { verdict }), 0);
			expect(verdicts).toBe(3);
			expect(after.value('pseo_jobs', { mode: 'bulk', status: 'running' })).toBe(0);
			expect(after.value('pseo_batch_parts_running')).toBe(0);
		});
	});
});
