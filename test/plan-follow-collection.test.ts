import { randomBytes } from 'node:crypto';
import { afterAll, afterEach, beforeAll, expect, it } from 'vitest';
import { adminItems, balanceOf, call, createUser, createWebsite, eventually, expectEnvelope, waitForJob } from './support/api.ts';
import { createCollection, grant, grantRead } from './support/collections.ts';
import { useSharedDirectus, type Leg } from './support/directus.ts';
import { startFixtureServer, type FixtureServer } from './support/sitemap-fixture-server.ts';
import { postsByRoute } from './support/synced-data.ts';
import { ensureWordPress, startWordPress, type WordPressSite } from './support/wordpress.ts';
import { ACCOUNTING_ENV, describeLegs, ENGINE_ENV, IMPORTED_PAGE_RATE, LEGS, schemaEditingEnv, SOURCE_SYNC_DELAY_MS } from './support/legs.ts';

/*
 * A Directus collection as a live data source (POST /plan/import with `follow: true`): an item created, changed or
 * deleted through Directus's own items API, by another user who may edit the collection, adds, updates (its post
 * stale) or retires its page within the delay, read with the website owner's permissions. A related item's change
 * updates the pages that name it; a batch update is one sync; pages the owner's balance does not cover wait; an owner
 * who loses access stops the following with the reason, and nothing is half-applied.
 */

const IMPORT = '/pseo-endpoints/plan/import';
const BULK = '/pseo-endpoints/trigger/bulk-generation';
/** PSEO_TOKEN_PER_BATCH_PAGE's default, which the engine's instance keeps. */
const BATCH_RATE = 5;
const template = { route: '/{name}', title: 'Plumbers in {name}, {country.name}', facts: ['population', 'country.name'] };
/** How long a change may take to reach the plan: the delay, a sweep, the sync itself on a loaded machine. */
const REACHES_PLAN_MS = SOURCE_SYNC_DELAY_MS + 14_000;
/** Items of the batch update: a sync of them all, counted. */
const BATCH_ITEMS = 10_000;

/**
 * The suite's Directus of `leg` and `env`, a pair of collections of its own (Directus's Core licence limits how many an
 * instance has: each test has items of its own `batch`, which its website's filter reads), and the helpers of its tests.
 */
function useFollowing(leg: Leg, env: Record<string, string>, accountability: 'all' | null = 'all') {
	// It creates and deletes collections: an instance of its own on SQLite (legs.ts).
	const { directus } = useSharedDirectus(leg, schemaEditingEnv(leg, env, 'plan-follow-collection'));
	const suffix = randomBytes(3).toString('hex');
	const collections = { countries: `countries_${suffix}`, cities: `cities_${suffix}` };
	const following: number[] = [];
	let site: FixtureServer;

	beforeAll(async () => {
		// The websites' origin: a loopback site without a sitemap, so each sync's on-site check stays here.
		site = await startFixtureServer({});
		await createCollection(directus, collections.countries, [
			{ field: 'name', type: 'string' },
			{ field: 'code', type: 'string' },
		]);
		await createCollection(directus, collections.cities, [
			{ field: 'name', type: 'string' },
			{ field: 'population', type: 'integer' },
			{ field: 'country', type: 'integer' },
			{ field: 'batch', type: 'string' },
			{ field: 'price', type: 'integer' },
		], 'integer', accountability);
		const relation = await call(directus, 'POST', '/relations', { token: directus.adminToken, body: { collection: collections.cities, field: 'country', related_collection: collections.countries } });
		expect(relation.status).toBe(200);
	});
	// A test's website stops following at its end: the next tests' writes to the collection are not its changes.
	afterEach(async () => {
		for (const pseoId of following.splice(0)) await call(directus, 'PATCH', `/items/pseo/${pseoId}`, { token: directus.adminToken, body: { data_source: null } });
	});
	afterAll(async () => {
		await site?.close();
		for (const collection of [collections.cities, collections.countries]) await call(directus, 'DELETE', `/collections/${collection}`, { token: directus.adminToken });
	});

	/** A test's own countries (Spain and France) and these cities of them, in a `batch` of its own. */
	async function dataset(cities: [name: string, population: number, country: 'ES' | 'FR', price?: number][]) {
		const batch = randomBytes(4).toString('hex');
		const ids: Record<string, number> = {};
		for (const [code, name] of [['ES', 'Spain'], ['FR', 'France']] as const) {
			ids[code] = (await call(directus, 'POST', `/items/${collections.countries}`, { token: directus.adminToken, body: { name, code } })).body.data.id;
		}
		if (cities.length > 0) {
			const created = await call(directus, 'POST', `/items/${collections.cities}`, {
				token: directus.adminToken,
				body: cities.map(([name, population, code, price]) => ({ name, population, country: ids[code], batch, price: price ?? null })),
			});
			expect(created.status).toBe(200);
			for (const item of created.body.data as { id: number; name: string }[]) ids[item.name] = item.id;
		}
		return { ...collections, ids, batch, filter: { batch: { _eq: batch } } };
	}

	/** The owner of a website who may read the data, and an editor who may change it (and nothing of the website). */
	async function setUp(data: { countries: string; cities: string; filter: Record<string, unknown> }, balance = 100) {
		const owner = await createUser(directus, { balance });
		const access = await grantRead(directus, owner, [
			{ collection: data.cities, fields: ['*'] },
			{ collection: data.countries, fields: ['*'] },
		]);
		const editor = await createUser(directus);
		await grant(
			directus,
			editor,
			[data.cities, data.countries].flatMap((collection) => (['create', 'read', 'update', 'delete'] as const).map((action) => ({ collection, action }))),
		);
		const pseoId = (await createWebsite(directus, owner, { website_url: site.origin })).id;
		following.push(pseoId);
		const follow = (body: Record<string, unknown> = {}) =>
			call(directus, 'POST', IMPORT, {
				token: owner.token,
				body: { pseo_id: pseoId, language_code: 'es-ES', template, mode: 'sync', source: 'cities', collection: data.cities, filter: data.filter, follow: true, ...body },
			});
		const pages = async () =>
			new Map(
				(await adminItems(directus, 'pseo_plan_pages', `filter[pseo_id][_eq]=${pseoId}&sort=id&fields=route,title,facts,source_item,retired_at`)).map((page) => [page.route as string, page]),
			);
		const website = async () => (await adminItems(directus, 'pseo', `filter[id][_eq]=${pseoId}&fields=data_source,data_source_state,source_sync_due`))[0]!;
		/**
		 * The syncs once the following is at rest: nothing due, and no sync for a while. Directus fires the actions of an
		 * array POST one by one after it answered, and an instance that meets a following begun while they came may
		 * sync it once more (source-follower.ts): a count of syncs starts after that.
		 */
		const settledSyncs = async (): Promise<number> => {
			for (let last = -1; ; ) {
				const now = await website();
				if (now.data_source_state.syncs === last && now.source_sync_due === null) return last;
				last = now.data_source_state.syncs;
				await new Promise((resolve) => setTimeout(resolve, SOURCE_SYNC_DELAY_MS + 1000));
			}
		};
		const state = async () => (await website()).data_source_state;
		const plans = async () => adminItems(directus, 'pseo_main_json', `filter[pseo_id][_eq]=${pseoId}&fields=id,status`);
		const edit = (method: 'POST' | 'PATCH' | 'DELETE', path: string, body?: unknown) => call(directus, method, `/items/${path}`, { token: editor.token, ...(body ? { body } : {}) });
		return { owner, access, editor, pseoId, follow, pages, website, state, plans, edit, settledSyncs };
	}

	/** Waits until the following has synced more than `syncs` times, and returns its state. */
	const syncedPast = (state: () => Promise<any>, syncs: number, timeoutMs = REACHES_PLAN_MS) =>
		eventually(async () => {
			const now = await state();
			return now?.syncs > syncs ? now : null;
		}, timeoutMs, `a sync after sync ${syncs}`);

	/**
	 * A second website following the same items (with `filter`, the data's own by default): where a test says a change
	 * syncs nothing, it waits for this one's sync of that change, not for a time. Both are noted together, so once this
	 * one synced, the other would be due or synced already had the change concerned it.
	 */
	async function witness(data: { countries: string; cities: string; filter: Record<string, unknown> }, filter = data.filter) {
		const other = await setUp({ ...data, filter });
		expect((await other.follow()).status).toBe(200);
		const syncs = (await other.state()).syncs as number;
		return { synced: () => syncedPast(other.state, syncs) };
	}

	/** A website's following at rest: no sync due. */
	const noSyncDue = async (pseoId: number) => (await adminItems(directus, 'pseo', `filter[id][_eq]=${pseoId}&fields=source_sync_due`))[0]!.source_sync_due;

	return { directus, dataset, setUp, syncedPast, witness, noSyncDue };
}

describeLegs('a followed collection on %s', LEGS, (leg) => {
	const { directus, dataset, setUp, syncedPast, witness, noSyncDue } = useFollowing(leg, ACCOUNTING_ENV);
	let wordpress: WordPressSite | undefined;
	afterAll(async () => {
		await wordpress?.stop();
	});

	it("an item created, updated and deleted by an editor adds its page, updates it (its post stale) and retires it within the delay, read as the owner and charged to them", async () => {
		const data = await dataset([
			['Madrid', 3_300_000, 'ES'],
			['Lyon', 520_000, 'FR'],
		]);
		const { owner, pseoId, follow, pages, website, state, edit, settledSyncs } = await setUp(data, 100);
		const started = await follow();
		expect(started.status).toBe(200);
		expect(started.body.data).toMatchObject({ added: 2, retired: 0 });
		const followed = await website();
		expect(followed.data_source).toEqual({
			collection: data.cities,
			filter: data.filter,
			template,
			source: 'cities',
			language_code: 'es-ES',
			related: { [data.countries]: ['name'] },
		});
		expect(followed.data_source_state).toMatchObject({ status: 'following', collection: data.cities, syncs: 1, waiting: 0, last_error: null, last_sync: { trigger: 'import', added: 2 } });

		// Both pages get a post, so that a change can make one stale.
		const bulk = await call(directus, 'POST', BULK, { token: owner.token, body: { pseo_id: pseoId, post_count: 2 } });
		expect(await waitForJob(directus, owner, bulk.body.generation_id)).toMatchObject({ status: 'completed', created_count: 2 });

		// Created: a page of its own, with its item's key, within the delay.
		let syncs = await settledSyncs();
		const createdAt = Date.now();
		const sevilla = await edit('POST', data.cities, { name: 'Sevilla', population: 690_000, country: data.ids['ES'], batch: data.batch });
		expect(sevilla.status).toBe(200);
		const added = await eventually(async () => (await pages()).get('/sevilla'), REACHES_PLAN_MS, 'the created item\'s page');
		expect(Date.now() - createdAt).toBeGreaterThanOrEqual(SOURCE_SYNC_DELAY_MS - 100);
		expect(added).toMatchObject({ title: 'Plumbers in Sevilla, Spain', facts: { population: 690_000, 'country.name': 'Spain' }, source_item: String(sevilla.body.data.id), retired_at: null });
		let now = await syncedPast(state, syncs);
		// The sync reads only the items that changed: one page added, the others not read again.
		expect(now.last_sync).toEqual({ trigger: 'follow', added: 1, updated: 0, unchanged: 0, retired: 0, waiting: 0 });
		syncs = now.syncs;

		// Updated: its page's facts, and its post stale.
		expect((await edit('PATCH', `${data.cities}/${data.ids['Madrid']}`, { population: 3_400_000 })).status).toBe(200);
		now = await syncedPast(state, syncs);
		expect(now.last_sync).toMatchObject({ added: 0, updated: 1, retired: 0 });
		expect((await pages()).get('/madrid')!.facts).toEqual({ population: 3_400_000, 'country.name': 'Spain' });
		expect((await postsByRoute(directus, pseoId)).get('/madrid')).toMatchObject({ stale: true });
		syncs = now.syncs;

		// Deleted: its page retired, and its post too.
		expect((await edit('DELETE', `${data.cities}/${data.ids['Lyon']}`)).status).toBe(204);
		now = await syncedPast(state, syncs);
		expect(now.last_sync).toMatchObject({ added: 0, retired: 1 });
		expect((await pages()).get('/lyon')!.retired_at).not.toBeNull();
		expect((await postsByRoute(directus, pseoId)).get('/lyon')).toMatchObject({ retired: true });

		// Three pages imported in all, each charged once to the owner; the editor paid nothing.
		expect(await balanceOf(directus, owner.id)).toBe(100 - 3 * IMPORTED_PAGE_RATE - 2 * BATCH_RATE);
		syncs = now.syncs;

		// Renamed: its route changes; the page of its old route is retired, found by its item's key.
		expect((await edit('PATCH', `${data.cities}/${sevilla.body.data.id}`, { name: 'Triana' })).status).toBe(200);
		now = await syncedPast(state, syncs);
		expect(now.last_sync).toMatchObject({ added: 1, retired: 1 });
		const renamed = await pages();
		expect(renamed.get('/triana')).toMatchObject({ source_item: String(sevilla.body.data.id), retired_at: null });
		expect(renamed.get('/sevilla')!.retired_at).not.toBeNull();
	});

	it('a change of a related item that the template names updates the pages that name it and makes their posts stale; a field it does not name syncs nothing', async () => {
		const data = await dataset([
			['Madrid', 3_300_000, 'ES'],
			['Sevilla', 690_000, 'ES'],
			['Lyon', 520_000, 'FR'],
		]);
		const { owner, pseoId, follow, pages, state, edit, settledSyncs } = await setUp(data);
		expect((await follow()).body.data).toMatchObject({ added: 3 });
		const bulk = await call(directus, 'POST', BULK, { token: owner.token, body: { pseo_id: pseoId, post_count: 3 } });
		expect(await waitForJob(directus, owner, bulk.body.generation_id)).toMatchObject({ status: 'completed', created_count: 3 });
		const syncs = await settledSyncs();

		// `code` is named by neither the template nor this website's filter: no sync of it comes of it. A website whose
		// filter names it syncs.
		const filtersByCode = await witness(data, { _and: [data.filter, { country: { code: { _nnull: true } } }] });
		expect((await edit('PATCH', `${data.countries}/${data.ids['ES']}`, { code: 'E' })).status).toBe(200);
		await filtersByCode.synced();
		expect(await noSyncDue(pseoId)).toBeNull();
		expect((await state()).syncs).toBe(syncs);

		expect((await edit('PATCH', `${data.countries}/${data.ids['ES']}`, { name: 'España' })).status).toBe(200);
		const now = await syncedPast(state, syncs);
		expect(now.last_sync).toMatchObject({ added: 0, updated: 2, unchanged: 1, retired: 0 });
		const after = await pages();
		expect(after.get('/madrid')).toMatchObject({ title: 'Plumbers in Madrid, España', facts: { population: 3_300_000, 'country.name': 'España' } });
		expect(after.get('/sevilla')).toMatchObject({ title: 'Plumbers in Sevilla, España' });
		expect(after.get('/lyon')).toMatchObject({ title: 'Plumbers in Lyon, France' });
		const posts = await postsByRoute(directus, pseoId);
		expect([...posts].map(([route, post]) => [route, post.stale]).sort()).toEqual([
			['/lyon', false],
			['/madrid', true],
			['/sevilla', true],
		]);
	});

	it("new items the owner's balance does not cover wait, counted on the website, and are added at a sync that the balance covers", async () => {
		const data = await dataset([['Madrid', 3_300_000, 'ES']]);
		const { owner, follow, pages, state, edit, plans, settledSyncs } = await setUp(data, IMPORTED_PAGE_RATE);
		expect((await follow()).body.data).toMatchObject({ added: 1 });
		expect(await balanceOf(directus, owner.id)).toBe(0);
		let syncs = await settledSyncs();
		const created = await edit('POST', data.cities, [
			{ name: 'Bilbao', population: 345_000, country: data.ids['ES'], batch: data.batch },
			{ name: 'Cádiz', population: 115_000, country: data.ids['ES'], batch: data.batch },
		]);
		expect(created.status).toBe(200);
		let now = await syncedPast(state, syncs);
		expect(now).toMatchObject({ waiting: 2, last_error: null, last_sync: { added: 0, waiting: 2 } });
		expect([...(await pages()).keys()]).toEqual(['/madrid']);
		expect((await plans()).every((plan) => plan.status === 'ready')).toBe(true);
		syncs = now.syncs;

		// One page's worth of tokens, given by an admin: a sync comes of it with no change of the collection, and adds
		// one of them; the other still waits.
		expect((await call(directus, 'PATCH', `/users/${owner.id}`, { token: directus.adminToken, body: { pseo_token_balance: IMPORTED_PAGE_RATE } })).status).toBe(200);
		now = await syncedPast(state, syncs);
		expect(now).toMatchObject({ waiting: 1, last_sync: { added: 1, updated: 0, unchanged: 1, waiting: 1 } });
		expect((await pages()).size).toBe(2);
		expect(await balanceOf(directus, owner.id)).toBe(0);
		syncs = now.syncs;

		// While one waits, each sync reads everything again (the waiting item is among no changed keys), and finds it.
		expect((await call(directus, 'PATCH', `/users/${owner.id}`, { token: directus.adminToken, body: { pseo_token_balance: IMPORTED_PAGE_RATE } })).status).toBe(200);
		now = await syncedPast(state, syncs);
		expect(now).toMatchObject({ waiting: 0, last_sync: { added: 1, waiting: 0 } });
		expect((await pages()).size).toBe(3);
	});

	it('an owner who loses read access stops the following, with the reason on the website and a notification; nothing is half-applied', async () => {
		const data = await dataset([
			['Madrid', 3_300_000, 'ES'],
			['Lyon', 520_000, 'FR'],
		]);
		const { owner, access, pseoId, follow, pages, website, plans, edit } = await setUp(data);
		expect((await follow()).body.data).toMatchObject({ added: 2 });
		const before = await pages();
		const plansBefore = await plans();
		expect((await call(directus, 'DELETE', `/access/${access}`, { token: directus.adminToken })).status).toBe(204);

		expect((await edit('PATCH', `${data.cities}/${data.ids['Madrid']}`, { population: 1 })).status).toBe(200);
		const stopped = await eventually(async () => {
			const now = await website();
			return now.data_source === null ? now : null;
		}, REACHES_PLAN_MS, 'the following to stop');
		expect(stopped.data_source_state).toMatchObject({ status: 'stopped', collection: data.cities, stopped_at: expect.any(String) });
		expect(stopped.data_source_state.last_error).toContain(data.cities);
		expect(await pages()).toEqual(before);
		expect(await plans()).toEqual(plansBefore);
		const notices = (await call(directus, 'GET', `/notifications?filter[recipient][_eq]=${owner.id}&fields=subject,message,collection,item`, { token: directus.adminToken })).body.data;
		expect(notices).toHaveLength(1);
		expect(notices[0]).toMatchObject({ collection: 'pseo', item: String(pseoId) });
		expect(notices[0].message).toContain(data.cities);

		// It stays stopped: a later change syncs nothing (while a website still following the items syncs it).
		const still = await witness(data);
		expect((await edit('PATCH', `${data.cities}/${data.ids['Lyon']}`, { population: 2 })).status).toBe(200);
		await still.synced();
		expect(await noSyncDue(pseoId)).toBeNull();
		expect(await pages()).toEqual(before);
	});

	it('data_source cleared through the items API, or an import with follow: false, stops the following; a written data_source is a 400', async () => {
		const data = await dataset([['Madrid', 3_300_000, 'ES']]);
		const { owner, pseoId, follow, pages, website, edit } = await setUp(data);
		expect((await follow()).status).toBe(200);
		const followed = (await website()).data_source;

		const written = await call(directus, 'PATCH', `/items/pseo/${pseoId}`, { token: owner.token, body: { data_source: { ...followed, collection: 'directus_users' } } });
		expect(written.status).toBe(400);
		expect(JSON.stringify(written.body)).toContain('follow');
		expect((await website()).data_source).toEqual(followed);

		const cleared = await call(directus, 'PATCH', `/items/pseo/${pseoId}`, { token: owner.token, body: { data_source: null } });
		expect(cleared.status).toBe(200);
		const stopped = await eventually(async () => {
			const now = await website();
			return now.data_source_state?.status === 'stopped' ? now : null;
		}, 10_000, 'the state to say stopped');
		expect(stopped).toMatchObject({ data_source: null, data_source_state: { last_error: null } });
		const still = await witness(data);
		expect((await edit('PATCH', `${data.cities}/${data.ids['Madrid']}`, { population: 1 })).status).toBe(200);
		await still.synced();
		expect(await noSyncDue(pseoId)).toBeNull();
		expect((await pages()).get('/madrid')!.facts.population).toBe(3_300_000);

		// Followed again, then an import that says follow: false.
		expect((await follow()).body.data).toMatchObject({ updated: 1 });
		expect((await website()).data_source_state).toMatchObject({ status: 'following', syncs: 1 });
		expect((await follow({ follow: false })).status).toBe(200);
		expect(await website()).toMatchObject({ data_source: null, data_source_state: { status: 'stopped' } });

		// follow: true is for a sync of a collection only.
		const bad = await follow({ mode: 'append' });
		expectEnvelope(bad, 400);
		expect(bad.body.error).toContain('"follow"');
	});

	it('auto refresh: an item\'s price changes, and with no user action its post is written again with the new price and updated in place on WordPress; a second change within the interval waits for it', async () => {
		await ensureWordPress();
		wordpress = await startWordPress({ name: `follow_${leg}` });
		const data = await dataset([['Madrid', 3_300_000, 'ES', 100]]);
		const { owner, pseoId, follow, state, edit } = await setUp(data, 100);
		const priced = { route: '/{name}', title: 'Plumbers in {name}', facts: ['price'] };
		expect((await follow({ template: priced })).body.data).toMatchObject({ added: 1 });
		const bulk = await call(directus, 'POST', BULK, { token: owner.token, body: { pseo_id: pseoId, post_count: 1 } });
		expect(await waitForJob(directus, owner, bulk.body.generation_id)).toMatchObject({ status: 'completed', created_count: 1 });
		const target = { target: 'wordpress', url: wordpress.url, username: wordpress.username, application_password: wordpress.applicationPassword };
		expect((await call(directus, 'PUT', `/pseo-endpoints/pseo/${pseoId}/publishing`, { token: owner.token, body: target })).status).toBe(200);
		const published = await call(directus, 'POST', '/pseo-endpoints/publish', { token: owner.token, body: { pseo_id: pseoId, status: 'publish' } });
		expect(published.status).toBe(202);
		await eventually(async () => (await call(directus, 'GET', `/pseo-endpoints/publications/${published.body.publication_id}`, { token: owner.token })).body.data?.status === 'completed', 60_000, 'the first publication');
		const ours = async () => (await wordpress!.listPosts()).filter((post) => post.content.includes(`pseo_ref_${pseoId}_`));
		const [first] = await ours();
		expect(first!.content).toContain('100');
		expect(first!.content).not.toContain('250');
		// The owner turns it on in the website's settings.
		expect((await call(directus, 'PATCH', `/items/pseo/${pseoId}`, { token: owner.token, body: { auto_refresh: true } })).status).toBe(200);

		const jobs = () => adminItems(directus, 'pseo_generations', `filter[pseo_id][_eq]=${pseoId}&sort=id&fields=id,kind,status,user_id`);
		const syncs = (await state()).syncs as number;
		expect((await edit('PATCH', `${data.cities}/${data.ids['Madrid']}`, { price: 250 })).status).toBe(200);
		await syncedPast(state, syncs);
		const refreshed = await eventually(async () => {
			const [post] = await ours();
			return post && post.content.includes('250') ? post : null;
		}, 120_000, 'the post on WordPress with the new price');
		// In place: the same WordPress post, and one only.
		expect(refreshed.id).toBe(first!.id);
		expect(await ours()).toHaveLength(1);
		const [, refresh] = await jobs();
		expect(refresh).toMatchObject({ kind: 'refresh', status: 'completed', user_id: owner.id });
		const website = (await adminItems(directus, 'pseo', `filter[id][_eq]=${pseoId}&fields=auto_refresh_state`))[0]!;
		expect(website.auto_refresh_state).toMatchObject({ last_job_id: refresh.id, last_pages: 1, deferred_reason: null, next_at: expect.any(String) });
		expect((await postsByRoute(directus, pseoId)).get('/madrid')).toMatchObject({ stale: false });
		// Charged to the owner at the batch rate: the page imported, the first post and its refresh.
		expect(await balanceOf(directus, owner.id)).toBe(100 - IMPORTED_PAGE_RATE - 2 * BATCH_RATE);

		// Another change within the interval (an hour here): its post goes stale and stays so until then, the website's
		// next turn being an hour after the last.
		expect(Date.parse(website.auto_refresh_state.next_at) - Date.parse(website.auto_refresh_state.last_started_at)).toBeGreaterThan(59 * 60_000);
		const later = (await state()).syncs as number;
		expect((await edit('PATCH', `${data.cities}/${data.ids['Madrid']}`, { price: 260 })).status).toBe(200);
		await syncedPast(state, later);
		expect((await postsByRoute(directus, pseoId)).get('/madrid')).toMatchObject({ stale: true });
		expect(await jobs()).toHaveLength(2);
	}, 240_000);

	it('auto refresh that the owner\'s balance does not cover is deferred to the next interval, with the reason on the website', async () => {
		const data = await dataset([['Madrid', 3_300_000, 'ES', 100]]);
		// Enough for the page and its first post, not for a refresh.
		const { owner, pseoId, follow, state, edit } = await setUp(data, IMPORTED_PAGE_RATE + BATCH_RATE);
		expect((await follow({ template: { route: '/{name}', title: 'Plumbers in {name}', facts: ['price'] } })).body.data).toMatchObject({ added: 1 });
		const bulk = await call(directus, 'POST', BULK, { token: owner.token, body: { pseo_id: pseoId, post_count: 1 } });
		expect(await waitForJob(directus, owner, bulk.body.generation_id)).toMatchObject({ status: 'completed', created_count: 1 });
		expect(await balanceOf(directus, owner.id)).toBe(0);
		expect((await call(directus, 'PATCH', `/items/pseo/${pseoId}`, { token: owner.token, body: { auto_refresh: true } })).status).toBe(200);

		const syncs = (await state()).syncs as number;
		expect((await edit('PATCH', `${data.cities}/${data.ids['Madrid']}`, { price: 250 })).status).toBe(200);
		await syncedPast(state, syncs);
		const deferred = await eventually(async () => {
			const [website] = await adminItems(directus, 'pseo', `filter[id][_eq]=${pseoId}&fields=auto_refresh_state`);
			return website?.auto_refresh_state?.deferred_reason ? website.auto_refresh_state : null;
		}, 15_000, 'the refresh to be deferred');
		expect(deferred).toMatchObject({ last_job_id: null, deferred_at: expect.any(String), next_at: expect.any(String) });
		expect(deferred.deferred_reason).toMatch(/token/i);
		expect(Date.parse(deferred.next_at) - Date.parse(deferred.deferred_at)).toBeGreaterThan(59 * 60_000);
		expect((await adminItems(directus, 'pseo_generations', `filter[pseo_id][_eq]=${pseoId}&fields=id`))).toHaveLength(1);
		expect((await postsByRoute(directus, pseoId)).get('/madrid')).toMatchObject({ stale: true });
		expect(await balanceOf(directus, owner.id)).toBe(0);
	});
});

// Its 10,000 pages are free here: the accounting instance's daily cap would refuse them.
describeLegs('a followed collection of 10,000 items on %s', LEGS, (leg) => {
	// Without Directus's activity and revisions of the items' writes: 10,000 items are written in half the time.
	const { dataset, setUp, syncedPast, noSyncDue } = useFollowing(leg, ENGINE_ENV, null);

	it(`one batch update of ${BATCH_ITEMS.toLocaleString('en')} items is applied as one sync`, async () => {
		const data = await dataset(Array.from({ length: BATCH_ITEMS }, (_, i) => [`town-${i + 1}`, 1000 + i, i % 2 === 0 ? 'ES' : 'FR'] as [string, number, 'ES' | 'FR']));
		const { pseoId, follow, pages, state, edit, settledSyncs } = await setUp(data);
		expect((await follow()).body.data).toMatchObject({ added: BATCH_ITEMS });
		const syncs = await settledSyncs();
		const keys = Object.entries(data.ids).filter(([name]) => name.startsWith('town-')).map(([, id]) => id);
		expect(keys).toHaveLength(BATCH_ITEMS);
		expect((await edit('PATCH', data.cities, { keys, data: { population: 7 } })).status).toBe(200);
		// A sync of 10,000 items is seconds of work of its own, more on a loaded machine.
		const now = await syncedPast(state, syncs, 120_000);
		expect(now.last_sync).toEqual({ trigger: 'follow', added: 0, updated: BATCH_ITEMS, unchanged: 0, retired: 0, waiting: 0 });
		// One sync applied them all: Directus fired the update's one action before it answered, and once that sync is
		// released nothing is due any more.
		await eventually(async () => (await noSyncDue(pseoId)) === null, 30_000, 'the sync to be released');
		expect((await state()).syncs).toBe(syncs + 1);
		const after = await pages();
		expect([...after.values()].every((page) => page.facts.population === 7)).toBe(true);
	}, 240_000);
});
