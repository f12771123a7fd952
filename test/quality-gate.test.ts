import { expect, it } from 'vitest';
import { adminItems, balanceOf, call, createUser, waitForJob } from './support/api.ts';
import { useSharedDirectus } from './support/directus.ts';
import { plannedSite } from './support/job-checks.ts';
import { describeLegs, ENGINE_ENV, LEGS } from './support/legs.ts';

/*
 * The quality gate as a job runs it: every stored page carries its verdict, a page that fails is written once
 * more inside its job with the issues named in the prompt and no extra charge, and one that fails again is stored
 * as failed. The checks themselves are unit-tested beside them (src/quality/).
 */

const ON_DEMAND = '/pseo-endpoints/trigger/on-demand-generation';
const BULK = '/pseo-endpoints/trigger/bulk-generation';
/** The default rates, which the shared instances keep. */
const PAGE_RATE = 10;
const BATCH_RATE = 5;

interface Issue {
	check: string;
	severity: string;
	detail: string;
}

describeLegs('quality gate on %s', LEGS, (leg) => {
	const { directus, fake } = useSharedDirectus(leg, ENGINE_ENV);

	const postOf = async (pseoId: number, route: string) => {
		const [post] = await adminItems(directus, 'pseo_posts', `filter[pseo_id][_eq]=${pseoId}&filter[route][_eq]=${encodeURIComponent(route)}`);
		return post as Record<string, any>;
	};
	const chatFor = (route: string) => fake.requests.filter((entry) => entry.path === '/v1/chat/completions' && entry.route === route);

	it('stores the verdict on every page, readable by its owner, after one call when the page is sound', async () => {
		const user = await createUser(directus, { balance: 100 });
		const site = await plannedSite(directus, user, 3);
		const started = await call(directus, 'POST', ON_DEMAND, { token: user.token, body: { pseo_id: site.pseoId, post_count: 1 } });
		expect(await waitForJob(directus, user, started.body.generation_id)).toMatchObject({ status: 'completed', created_count: 1 });
		const route = site.routes[0]!;
		expect(chatFor(route)).toHaveLength(1);

		const own = await call(directus, 'GET', `/items/pseo_posts?filter[route][_eq]=${encodeURIComponent(route)}&fields=route,quality_status,quality_score,quality_issues`, {
			token: user.token,
		});
		expect(own.status).toBe(200);
		const [post] = own.body.data;
		// The seeded plan's short titles make a short meta title: a warning, not a failure.
		expect(post.quality_status).toBe('warn');
		expect(post.quality_score).toBe(90);
		expect(post.quality_issues).toEqual([{ check: 'meta_title', severity: 'warn', detail: expect.stringMatching(/^\d+ characters; 30 to 60 fit a search result$/) }]);
		// The signature is stored for the index, but hidden in the app.
		expect(typeof (await postOf(site.pseoId, route)).quality_signature).toBe('string');
	});

	it('writes a thin page once more with its issues in the prompt, at no extra charge, and stores the second version', async () => {
		const user = await createUser(directus, { balance: 100 });
		const site = await plannedSite(directus, user, 3);
		const route = site.routes[0]!;
		fake.configure({ lowQualityRoutes: { [route]: 'thin' } });
		const started = await call(directus, 'POST', ON_DEMAND, { token: user.token, body: { pseo_id: site.pseoId, post_count: 1 } });
		const job = await waitForJob(directus, user, started.body.generation_id);
		expect(job).toMatchObject({ status: 'completed', created_count: 1, failed_count: 0 });

		const calls = chatFor(route);
		expect(calls).toHaveLength(2);
		expect(calls[0]!.qualityIssues).toBeUndefined();
		expect(calls[1]!.qualityIssues).toEqual(expect.arrayContaining([expect.stringMatching(/^words: \d+ words; at least 300 are needed$/)]));
		const post = await postOf(site.pseoId, route);
		expect(post.quality_status).not.toBe('fail');
		expect(post.body.split(/\s+/).length).toBeGreaterThan(300);
		// Charged once for the page; the provider's usage counts both answers.
		expect(await balanceOf(directus, user.id)).toBe(100 - PAGE_RATE);
		const read = await call(directus, 'GET', `/pseo-endpoints/generations/${started.body.generation_id}`, { token: user.token });
		expect(read.body.data.usage.requests).toBe(2);
	});

	it('stores a page that fails twice as failed: a near-duplicate of another post, named', async () => {
		const user = await createUser(directus, { balance: 100 });
		const site = await plannedSite(directus, user, 3);
		const [original, copy] = site.routes as [string, string];
		fake.configure({ lowQualityRoutes: { [original]: 'duplicate', [copy]: 'duplicate' }, lowQualityPersists: true });
		for (const count of [1, 1]) {
			const started = await call(directus, 'POST', ON_DEMAND, { token: user.token, body: { pseo_id: site.pseoId, post_count: count } });
			// A failed gate still stores the page: the job completes, the editor decides.
			expect(await waitForJob(directus, user, started.body.generation_id)).toMatchObject({ status: 'completed', created_count: 1 });
		}
		// The first has nothing to be a duplicate of; the second is one of the first, in both its versions.
		expect(chatFor(original)).toHaveLength(1);
		expect(chatFor(copy)).toHaveLength(2);
		// Every issue is named, warnings too, so that the second draft fixes them as well.
		expect(chatFor(copy)[1]!.qualityIssues).toEqual(
			expect.arrayContaining([expect.stringMatching(new RegExp(`^near_duplicate: \\d+% similar to ${original}; at most 80% is allowed$`))]),
		);
		const post = await postOf(site.pseoId, copy);
		expect(post.quality_status).toBe('fail');
		expect(post.quality_score).toBeLessThanOrEqual(70);
		expect((post.quality_issues as Issue[]).filter((found) => found.severity === 'fail')).toEqual([
			{ check: 'near_duplicate', severity: 'fail', detail: expect.stringMatching(new RegExp(`similar to ${original};`)) },
		]);
		expect((await postOf(site.pseoId, original)).quality_status).not.toBe('fail');
		expect(await balanceOf(directus, user.id)).toBe(100 - 2 * PAGE_RATE);
	});

	it('gates a batch job\'s results too: a thin page from the batch is written once more through chat', async () => {
		const user = await createUser(directus, { balance: 100 });
		const site = await plannedSite(directus, user, 4);
		const thin = site.routes[2]!;
		fake.configure({ lowQualityRoutes: { [thin]: 'thin' } });
		const started = await call(directus, 'POST', BULK, { token: user.token, body: { pseo_id: site.pseoId, post_count: 4 } });
		const job = await waitForJob(directus, user, started.body.generation_id);
		expect(job).toMatchObject({ status: 'completed', created_count: 4, failed_count: 0 });
		expect(fake.countBatchedRoute(thin)).toBe(1);
		expect(chatFor(thin)).toHaveLength(1);
		expect(chatFor(thin)[0]!.qualityIssues).toEqual(expect.arrayContaining([expect.stringMatching(/^words: /)]));
		for (const route of site.routes) expect((await postOf(site.pseoId, route)).quality_status, route).not.toBe('fail');
		expect(await balanceOf(directus, user.id)).toBe(100 - 4 * BATCH_RATE);
		const read = await call(directus, 'GET', `/pseo-endpoints/generations/${started.body.generation_id}`, { token: user.token });
		expect(read.body.data.usage.requests).toBe(5);
	});
});
