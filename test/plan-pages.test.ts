import { expect, it } from 'vitest';
import { adminItems, call, createUser, createWebsite, eventually, expectEnvelope, planPages, seedPlan, waitForJob } from './support/api.ts';
import { startDirectus, useSharedDirectus } from './support/directus.ts';
import { describeLegs, ENGINE_ENV, ENGINE_INTERFACE_LEGS } from './support/legs.ts';

/*
 * Plan pages as rows (`pseo_plan_pages`): what generation reads, what editors edit as a table in the app, and
 * the migration of plans stored as one JSON document.
 */

const BULK = '/pseo-endpoints/trigger/bulk-generation';
const ON_DEMAND = '/pseo-endpoints/trigger/on-demand-generation';

describeLegs('plan pages on %s', ENGINE_INTERFACE_LEGS, (leg) => {
	const { directus } = useSharedDirectus(leg, ENGINE_ENV);

	const rowsOf = (pseoId: number) => adminItems(directus, 'pseo_plan_pages', `filter[pseo_id][_eq]=${pseoId}&sort=-priority,id`);

	it('a generated plan is stored as rows, one per route, and the next plan replaces them', async () => {
		const user = await createUser(directus, { balance: 1000 });
		const { id: pseoId } = await createWebsite(directus, user);
		const generate = () =>
			call(directus, 'POST', '/pseo-endpoints/generate/main-json', {
				token: user.token,
				body: { pseo_id: pseoId, language_code: 'en-US', description: 'A family-run plumbing company in Leeds that fixes boilers, leaks and heating systems fast, with fixed prices, same-day visits across West Yorkshire and a two-year guarantee on every repair.' },
			});
		const first = await generate();
		expect(first.status).toBe(200);
		const pages = first.body.data.main_json.pages as { route: string; title: string; priority: number }[];
		const planIds = async () => (await adminItems(directus, 'pseo_main_json', `filter[pseo_id][_eq]=${pseoId}&sort=-id&fields=id`)).map((plan) => plan.id);
		const [firstId] = await planIds();
		const rows = await rowsOf(pseoId);
		expect(rows.map((row) => row.route).sort()).toEqual(pages.map((page) => page.route).sort());
		const byRoute = new Map(rows.map((row) => [row.route, row]));
		for (const page of pages) {
			expect(byRoute.get(page.route)).toMatchObject({ title: page.title, priority: page.priority, has_post: false, user_id: user.id, main_json_id: firstId });
		}
		const second = await generate();
		expect(second.status).toBe(200);
		const [secondId] = await planIds();
		expect(secondId).not.toBe(firstId);
		const replaced = await rowsOf(pseoId);
		expect(replaced.map((row) => row.main_json_id)).toEqual(replaced.map(() => secondId));
		expect(replaced.map((row) => row.route).sort()).toEqual((second.body.data.main_json.pages as { route: string }[]).map((page) => page.route).sort());
	});

	it('a plan written as one JSON document gets its rows on first use, and generation follows the rows', async () => {
		const user = await createUser(directus, { balance: 1000 });
		const { id: pseoId } = await createWebsite(directus, user);
		const plan = planPages(4, `/doc${Date.now()}`);
		await seedPlan(directus, user, pseoId, plan);
		const started = await call(directus, 'POST', BULK, { token: user.token, body: { pseo_id: pseoId, post_count: 2 } });
		expect(started.status).toBe(202);
		await waitForJob(directus, user, started.body.generation_id);
		const rows = await rowsOf(pseoId);
		expect(rows.map((row) => [row.route, row.has_post])).toEqual(plan.map((page, i) => [page.route, i < 2]));
		// The plan's JSON document is kept, as written.
		const [stored] = await adminItems(directus, 'pseo_main_json', `filter[pseo_id][_eq]=${pseoId}`);
		expect(stored.main_json.pages).toEqual(plan);
	});

	it('the owner edits the plan as a table: a new title and priority are what the next job writes, a deleted route is never generated', async () => {
		const user = await createUser(directus, { balance: 1000 });
		const { id: pseoId } = await createWebsite(directus, user);
		const plan = planPages(4, `/table${Date.now()}`);
		await seedPlan(directus, user, pseoId, plan);
		// First use stores the rows.
		const warm = await call(directus, 'POST', BULK, { token: user.token, body: { pseo_id: pseoId, post_count: 1 } });
		await waitForJob(directus, user, warm.body.generation_id);

		const own = await call(directus, 'GET', `/items/pseo_plan_pages?filter[pseo_id][_eq]=${pseoId}&sort=id`, { token: user.token });
		expect(own.status).toBe(200);
		const [, second, third, fourth] = own.body.data as { id: number; route: string }[];
		const edited = await call(directus, 'PATCH', `/items/pseo_plan_pages/${fourth!.id}`, { token: user.token, body: { title: 'Boiler Repair in Leeds', priority: 100 } });
		expect(edited.status).toBe(200);
		expect((await call(directus, 'DELETE', `/items/pseo_plan_pages/${second!.id}`, { token: user.token })).status).toBe(204);
		// The route and the bookkeeping are the extension's.
		expect((await call(directus, 'PATCH', `/items/pseo_plan_pages/${third!.id}`, { token: user.token, body: { route: '/elsewhere' } })).status).toBe(403);
		expect((await call(directus, 'PATCH', `/items/pseo_plan_pages/${third!.id}`, { token: user.token, body: { has_post: true } })).status).toBe(403);

		// Two ungenerated routes are left; the edited one comes first, with its new title.
		expectEnvelope(await call(directus, 'POST', BULK, { token: user.token, body: { pseo_id: pseoId, post_count: 3 } }), 400);
		const started = await call(directus, 'POST', BULK, { token: user.token, body: { pseo_id: pseoId, post_count: 2 } });
		expect(started.status).toBe(202);
		const job = await waitForJob(directus, user, started.body.generation_id);
		expect(job.status).toBe('completed');
		const posts = await adminItems(directus, 'pseo_posts', `filter[pseo_id][_eq]=${pseoId}`);
		expect(posts.map((post) => post.route).sort()).toEqual([plan[0]!.route, third!.route, fourth!.route].sort());
		expect(posts.find((post) => post.route === fourth!.route)!.title).toBe('Boiler Repair in Leeds');
		expect(posts.map((post) => post.route)).not.toContain(second!.route);
	});

	it('one-page jobs share the plan the instance read for the website, and an editor\'s change to it reaches the next one', async () => {
		const user = await createUser(directus, { balance: 1000 });
		const { id: pseoId } = await createWebsite(directus, user);
		const plan = planPages(3, `/shared${Date.now()}`);
		await seedPlan(directus, user, pseoId, plan);
		const onDemand = async () => {
			const started = await call(directus, 'POST', ON_DEMAND, { token: user.token, body: { pseo_id: pseoId, post_count: 1 } });
			expect(started.status).toBe(202);
			expect((await waitForJob(directus, user, started.body.generation_id)).status).toBe('completed');
		};
		const linksOf = async (route: string) => {
			const [post] = await adminItems(directus, 'pseo_posts', `filter[pseo_id][_eq]=${pseoId}&filter[route][_eq]=${encodeURIComponent(route)}`);
			return new Map((post.internal_links as { route: string; anchor: string }[]).map((link) => [link.route, link.anchor]));
		};
		const planPageId = async (route: string) =>
			(await adminItems(directus, 'pseo_plan_pages', `filter[pseo_id][_eq]=${pseoId}&filter[route][_eq]=${encodeURIComponent(route)}`))[0]!.id;
		// The first page links to the two others, by the titles the plan gives them (the fake's anchors are those).
		await onDemand();
		expect(await linksOf(plan[0]!.route)).toEqual(new Map([[plan[1]!.route, 'Page 2'], [plan[2]!.route, 'Page 3']]));

		// The editor renames the third page: the same number of pages, the same last page.
		const renamed = await call(directus, 'PATCH', `/items/pseo_plan_pages/${await planPageId(plan[2]!.route)}`, { token: user.token, body: { title: 'Boiler Repair in Leeds' } });
		expect(renamed.status).toBe(200);
		await onDemand();
		expect(await linksOf(plan[1]!.route)).toEqual(new Map([[plan[0]!.route, 'Page 1'], [plan[2]!.route, 'Boiler Repair in Leeds']]));

		// The editor deletes the first page from the plan: the next page no longer links to it.
		const deleted = await call(directus, 'DELETE', `/items/pseo_plan_pages/${await planPageId(plan[0]!.route)}`, { token: user.token });
		expect(deleted.status).toBe(204);
		await onDemand();
		expect(await linksOf(plan[2]!.route)).toEqual(new Map([[plan[1]!.route, 'Page 2']]));

		// An admin moves a page to another website: the plans of both changed (the one it left read before the move).
		const { id: elsewhere } = await createWebsite(directus, user);
		const versionOf = async (id: number) => Number((await adminItems(directus, 'pseo', `filter[id][_eq]=${id}&fields=plan_version`))[0]!.plan_version);
		const [left, reached] = [await versionOf(pseoId), await versionOf(elsewhere)];
		const other = await createWebsite(directus, user);
		const untouched = await versionOf(other.id);
		const moved = await call(directus, 'PATCH', `/items/pseo_plan_pages/${await planPageId(plan[1]!.route)}`, { token: directus.adminToken, body: { pseo_id: elsewhere } });
		expect(moved.status).toBe(200);
		await eventually(async () => (await versionOf(pseoId)) > left && (await versionOf(elsewhere)) > reached, 10_000, 'both websites\' plan versions bumped');
		expect(await versionOf(other.id)).toBe(untouched);
	});

	it('another user neither sees nor changes the rows; a deleted post makes its route ungenerated again', async () => {
		const user = await createUser(directus, { balance: 1000 });
		const { id: pseoId } = await createWebsite(directus, user);
		const plan = planPages(2, `/own${Date.now()}`);
		await seedPlan(directus, user, pseoId, plan);
		const first = await call(directus, 'POST', BULK, { token: user.token, body: { pseo_id: pseoId, post_count: 2 } });
		await waitForJob(directus, user, first.body.generation_id);
		const rows = await rowsOf(pseoId);
		expect(rows.map((row) => row.has_post)).toEqual([true, true]);

		const stranger = await createUser(directus);
		const seen = await call(directus, 'GET', `/items/pseo_plan_pages?filter[pseo_id][_eq]=${pseoId}`, { token: stranger.token });
		expect(seen.status).toBe(200);
		expect(seen.body.data).toEqual([]);
		expect((await call(directus, 'PATCH', `/items/pseo_plan_pages/${rows[0].id}`, { token: stranger.token, body: { title: 'Mine now' } })).status).toBe(403);
		expect((await call(directus, 'DELETE', `/items/pseo_plan_pages/${rows[0].id}`, { token: stranger.token })).status).toBe(403);
		expect(await rowsOf(pseoId)).toHaveLength(2);

		// An admin deletes a post: its route can be generated again.
		const [post] = await adminItems(directus, 'pseo_posts', `filter[pseo_id][_eq]=${pseoId}&filter[route][_eq]=${encodeURIComponent(plan[1]!.route)}`);
		expect((await call(directus, 'DELETE', `/items/pseo_posts/${post.id}`, { token: directus.adminToken })).status).toBe(204);
		expect((await rowsOf(pseoId)).map((row) => [row.route, row.has_post])).toEqual([
			[plan[0]!.route, true],
			[plan[1]!.route, false],
		]);
		const again = await call(directus, 'POST', BULK, { token: user.token, body: { pseo_id: pseoId, post_count: 1 } });
		expect(again.status).toBe(202);
		await waitForJob(directus, user, again.body.generation_id);
		expect((await adminItems(directus, 'pseo_posts', `filter[pseo_id][_eq]=${pseoId}`)).map((p) => p.route).sort()).toEqual(plan.map((p) => p.route).sort());
	});

	it('start-up migrates plans stored as JSON documents, additively, without losing a page', async () => {
		// A restart needs an instance of its own.
		const own = await startDirectus({ leg });
		try {
			const rowsOn = (pseoId: number) => adminItems(own, 'pseo_plan_pages', `filter[pseo_id][_eq]=${pseoId}&sort=-priority,id`);
			const user = await createUser(own, { balance: 1000 });
			const { id: pseoId } = await createWebsite(own, user);
			const plan = planPages(30, `/boot${Date.now()}`);
			await seedPlan(own, user, pseoId, plan);
			expect(await rowsOn(pseoId)).toEqual([]);
			await own.stop();
			await own.restart();
			const rows = await rowsOn(pseoId);
			expect(rows.map((row) => row.route)).toEqual(plan.map((page) => page.route));
			expect(rows.map((row) => row.title)).toEqual(plan.map((page) => page.title));
		} finally {
			await own.dispose();
		}
	});
});
