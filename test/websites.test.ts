import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import manifest from '../package.json' with { type: 'json' };
import { ROUTES } from '../src/contracts/route-table.ts';
import { buildOpenApi } from '../src/openapi/build-openapi.ts';
import { adminItems, balanceOf, call, createUser, createWebsite, eventually, expectEnvelope, ledgerOf, PSEO_USER_ROLE, type PasswordUser, type TestUser } from './support/api.ts';
import { shareDirectus, startDirectus, type DirectusInstance } from './support/directus.ts';
import { CORE_INTERFACE_LEGS, legAvailable } from './support/legs.ts';

describe.each(CORE_INTERFACE_LEGS)('foundation on %s', (leg) => {
	describe.skipIf(!legAvailable(leg))(`${leg}`, () => {
		let directus: DirectusInstance;
		let alice: PasswordUser;
		let bob: TestUser;

		beforeAll(async () => {
			directus = await shareDirectus(leg);
			alice = await createUser(directus, { balance: 100, password: true });
			bob = await createUser(directus, { balance: 0 });
		});
		afterAll(async () => {
			await directus?.dispose();
		});

		it('4.1 health answers without authentication with the documented body', async () => {
			const res = await call(directus, 'GET', '/pseo-endpoints/');
			expect(res.status).toBe(200);
			expect(res.body).toMatchObject({ success: true, status: 'ok', extension: 'pseo-automation' });
			expect(res.body.version).toMatch(/^\d+\.\d+\.\d+/);
			expect(res.body.timestamp).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
			expect(res.body.endpoints).toEqual([
				'GET /',
				'POST /pseo',
				'POST /trigger/on-demand-generation',
				'POST /trigger/bulk-generation',
				'POST /trigger/refresh-generation',
				'GET /generations/:id',
				'GET /generations?pseo_id=X',
				'POST /generations/:id/cancel',
				'POST /generations/:id/retry',
				'POST /posts/:id/regenerate',
				'POST /generate/main-json',
				'POST /plan/import',
				'GET /fetch-sitemap?pseo_id=X',
				'GET /balance',
				'GET /providers',
				'PUT /pseo/:id/publishing',
				'GET /pseo/:id/publishing',
				'DELETE /pseo/:id/publishing',
				'POST /publish',
				'GET /publications/:id',
				'GET /openapi.json',
				'GET /metrics',
			]);
		});

		it('GET /openapi.json serves the OpenAPI document built by the source, without a token', async () => {
			const res = await call(directus, 'GET', '/pseo-endpoints/openapi.json');
			expect(res.status).toBe(200);
			expect(res.headers.get('content-type')).toMatch(/^application\/json/);
			expect(res.body).toEqual(buildOpenApi(ROUTES, manifest.version));
			// Directus checks any token it receives, even on a route that needs none (the document says 401 there too).
			expectEnvelope(await call(directus, 'GET', '/pseo-endpoints/openapi.json', { token: 'not-a-real-token' }), 401);
		});

		it('Directus\'s own /server/specs/oas leaves the extension\'s routes out (hence GET /openapi.json)', async () => {
			const res = await call(directus, 'GET', '/server/specs/oas', { token: directus.adminToken });
			expect(res.status).toBe(200);
			expect(Object.keys(res.body.paths).length).toBeGreaterThan(0);
			expect(Object.keys(res.body.paths).filter((path) => path.startsWith('/pseo-endpoints'))).toEqual([]);
		});

		it('4.2 an admin logs in and gets Directus tokens', async () => {
			const res = await call(directus, 'POST', '/auth/login', {
				body: { email: 'admin@example.com', password: 'test-admin-password' },
			});
			expect(res.status).toBe(200);
			expect(typeof res.body.data.access_token).toBe('string');
			expect(typeof res.body.data.refresh_token).toBe('string');
			expect(typeof res.body.data.expires).toBe('number');
		});

		it('4.3 creates a website with the documented 201 body, owned by the caller', async () => {
			const res = await call(directus, 'POST', '/pseo-endpoints/pseo', {
				token: alice.token,
				body: { website_url: 'https://shop.example.com/', master_prompt: 'Friendly, expert tone.' },
			});
			expect(res.status).toBe(201);
			expect(res.body.success).toBe(true);
			expect(typeof res.body.message).toBe('string');
			expect(res.body.data).toEqual({
				id: expect.any(Number),
				website_url: 'https://shop.example.com/',
				website_software: 'wordpress',
				backend_user_id: alice.id,
				post_counts_total: 0,
			});
		});

		it('4.3 keeps an explicit website_software', async () => {
			const res = await call(directus, 'POST', '/pseo-endpoints/pseo', {
				token: alice.token,
				body: { website_url: 'http://example.org', master_prompt: 'x', website_software: 'shopify' },
			});
			expect(res.status).toBe(201);
			expect(res.body.data.website_software).toBe('shopify');
		});

		it.each([
			['missing website_url', { master_prompt: 'x' }],
			['relative website_url', { website_url: '/about', master_prompt: 'x' }],
			['non-http website_url', { website_url: 'ftp://example.com', master_prompt: 'x' }],
			['javascript website_url', { website_url: 'javascript:alert(1)', master_prompt: 'x' }],
			['numeric website_url', { website_url: 42, master_prompt: 'x' }],
			['missing master_prompt', { website_url: 'https://example.com' }],
			['empty master_prompt', { website_url: 'https://example.com', master_prompt: '   ' }],
			['array master_prompt', { website_url: 'https://example.com', master_prompt: ['x'] }],
			['numeric website_software', { website_url: 'https://example.com', master_prompt: 'x', website_software: 3 }],
			['unknown field', { website_url: 'https://example.com', master_prompt: 'x', post_counts_total: 9 }],
		])('4.3 rejects %s with 400 in the error envelope', async (_name, body) => {
			// Alice's websites: other suites share this instance and make their own meanwhile.
			const hers = () => adminItems(directus, 'pseo', `filter[backend_user_id][_eq]=${alice.id}`);
			const before = await hers();
			const res = await call(directus, 'POST', '/pseo-endpoints/pseo', { token: alice.token, body });
			expectEnvelope(res, 400);
			expect(await hers()).toHaveLength(before.length);
		});

		it.each([
			['malformed JSON', '{"website_url": '],
			['a JSON array', '[1,2]'],
			['a JSON string', '"hello"'],
		])('4.3 rejects %s with 400', async (_name, raw) => {
			expectEnvelope(await call(directus, 'POST', '/pseo-endpoints/pseo', { token: alice.token, body: raw }), 400);
		});

		it('5 an anonymous caller gets 401 in the envelope', async () => {
			const res = await call(directus, 'POST', '/pseo-endpoints/pseo', { body: { website_url: 'https://a.b', master_prompt: 'x' } });
			expectEnvelope(res, 401);
		});

		it('5 an invalid static token and a forged JWT get 401 in the envelope, not Directus errors', async () => {
			for (const token of ['not-a-real-token', 'eyJhbGciOiJIUzI1NiJ9.eyJpZCI6IngifQ.c2lnbmF0dXJl']) {
				const res = await call(directus, 'POST', '/pseo-endpoints/pseo', { token, body: {} });
				const body = expectEnvelope(res, 401);
				expect(body).not.toHaveProperty('errors');
			}
			expectEnvelope(await call(directus, 'GET', '/pseo-endpoints/generations?pseo_id=1', { token: 'bad' }), 401);
		});

		it('GET /balance answers the caller\'s own balance and the rates, and follows an admin grant', async () => {
			const carol = await createUser(directus, { balance: 42 });
			const res = await call(directus, 'GET', '/pseo-endpoints/balance', { token: carol.token });
			expect(res.status).toBe(200);
			expect(res.body).toMatchObject({
				success: true,
				data: { balance: 42, rates: { token_per_page: 10, token_per_batch_page: 5, token_per_main_json: 20 }, daily_cap: null },
			});
			expect(res.body.timestamp).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
			const grant = await call(directus, 'PATCH', `/users/${carol.id}`, { token: directus.adminToken, body: { pseo_token_balance: 50 } });
			expect(grant.status).toBe(200);
			expect((await call(directus, 'GET', '/pseo-endpoints/balance', { token: carol.token })).body.data.balance).toBe(50);
			// Each caller sees their own balance only.
			expect((await call(directus, 'GET', '/pseo-endpoints/balance', { token: bob.token })).body.data.balance).toBe(await balanceOf(directus, bob.id));
		});

		it("an admin's balance edit sent with other fields of the user changes the balance only when the update succeeds", async () => {
			const dave = await createUser(directus, { balance: 42 });
			const grants = async () => (await ledgerOf(directus, dave.id)).filter((row) => row.reason === 'grant').map((row) => Number(row.amount));
			// The initial balance's grant is booked by the create's action, beside its answer.
			await eventually(async () => (await grants()).length === 1, 10_000, 'the initial grant');
			const before = await grants();
			// Directus refuses the update (the email belongs to another user) after the extension's filter ran.
			const refused = await call(directus, 'PATCH', `/users/${dave.id}`, { token: directus.adminToken, body: { email: bob.email, pseo_token_balance: 500 } });
			expect(refused.status).toBe(400);
			// The update that succeeds carries its balance; by then a refused edit would have been applied too.
			const saved = await call(directus, 'PATCH', `/users/${dave.id}`, { token: directus.adminToken, body: { first_name: 'Dave', pseo_token_balance: 60 } });
			expect(saved.status).toBe(200);
			await eventually(async () => (await balanceOf(directus, dave.id)) === 60, 10_000, 'the balance of the accepted edit');
			expect(await grants()).toEqual([...before, 18]);
			const user = await call(directus, 'GET', `/users/${dave.id}?fields=first_name,email`, { token: directus.adminToken });
			expect(user.body.data).toEqual({ first_name: 'Dave', email: dave.email });
		});

		it("an admin's balance edit in a batch update, or in a GraphQL mutation that Directus refuses, leaves no balance behind", async () => {
			const erin = await createUser(directus, { balance: 42 });
			const grants = async () => (await ledgerOf(directus, erin.id)).filter((row) => row.reason === 'grant').map((row) => Number(row.amount));
			await eventually(async () => (await grants()).length === 1, 10_000, 'the initial grant');
			const before = await grants();
			// A batch update runs in one transaction: the second item's taken email rolls the first item's balance back.
			const batch = await call(directus, 'PATCH', '/users', {
				token: directus.adminToken,
				body: [
					{ id: erin.id, pseo_token_balance: 70 },
					{ id: bob.id, email: alice.email },
				],
			});
			expect(batch.status).toBe(400);
			expect(await balanceOf(directus, erin.id)).toBe(42);
			// A refused mutation, then an accepted one of the same user in the same document, without a balance.
			const mutation = `mutation {
				refused: update_users_item(id: "${erin.id}", data: { email: "${bob.email}", pseo_token_balance: 500 }) { id }
				accepted: update_users_item(id: "${erin.id}", data: { first_name: "Erin" }) { id }
			}`;
			const graphql = await call(directus, 'POST', '/graphql/system', { token: directus.adminToken, body: { query: mutation } });
			expect(graphql.status).toBe(200);
			expect(graphql.body.errors).toHaveLength(1);
			expect(graphql.body.data.accepted).toEqual({ id: erin.id });
			expect(await balanceOf(directus, erin.id)).toBe(42);
			expect(await grants()).toEqual(before);
			// And a batch that Directus accepts books its balance with it. A grant wrongly taken by the accepted mutation
			// would have been started by its action, before the document's answer: it locks the payer's row before this
			// batch does, so the ledger read after the batch holds it.
			const accepted = await call(directus, 'PATCH', '/users', { token: directus.adminToken, body: [{ id: erin.id, first_name: 'E', pseo_token_balance: 80 }] });
			expect(accepted.status).toBe(200);
			expect(await balanceOf(directus, erin.id)).toBe(80);
			expect(await grants()).toEqual([...before, 38]);
		});

		it('5 a login JWT works as a Bearer token', async () => {
			const login = await call(directus, 'POST', '/auth/login', { body: { email: alice.email, password: alice.password } });
			expect(login.status).toBe(200);
			const res = await call(directus, 'POST', '/pseo-endpoints/pseo', {
				token: login.body.data.access_token,
				body: { website_url: 'https://jwt.example.com', master_prompt: 'x' },
			});
			expect(res.status).toBe(201);
			expect(res.body.data.backend_user_id).toBe(alice.id);
		});

		it('7 an unknown path under the endpoint is a 404 in the envelope', async () => {
			expectEnvelope(await call(directus, 'GET', '/pseo-endpoints/does-not-exist', { token: alice.token }), 404);
		});

		it('3 a non-admin sees only their own websites through the items API', async () => {
			const mine = await createWebsite(directus, bob, { website_url: 'https://bob.example.com' });
			const asBob = await call(directus, 'GET', '/items/pseo?limit=-1', { token: bob.token });
			expect(asBob.status).toBe(200);
			expect(asBob.body.data.map((row: { id: number }) => row.id)).toEqual([mine.id]);
			const aliceRows = await call(directus, 'GET', '/items/pseo?limit=-1', { token: alice.token });
			expect(aliceRows.body.data.every((row: { backend_user_id: string }) => row.backend_user_id === alice.id)).toBe(true);
			expect(aliceRows.body.data.length).toBeGreaterThanOrEqual(2);
			// Another user's row by id is hidden, and filters cannot widen the view.
			expect((await call(directus, 'GET', `/items/pseo/${mine.id}`, { token: alice.token })).status).toBe(403);
			const widened = await call(directus, 'GET', `/items/pseo?filter[id][_eq]=${mine.id}`, { token: alice.token });
			expect(widened.body.data).toEqual([]);
		});

		it('3 a non-admin reads only their own rows of every pSEO collection', async () => {
			await createWebsite(directus, bob, { website_url: 'https://bob-rows.example.com' });
			await createWebsite(directus, alice, { website_url: 'https://alice-rows.example.com' });
			const bobBalance = await balanceOf(directus, bob.id);
			await call(directus, 'PATCH', `/users/${bob.id}`, { token: directus.adminToken, body: { pseo_token_balance: bobBalance + 1 } });
			for (const [collection, owner] of [
				['pseo', 'backend_user_id'],
				['pseo_generations', 'user_id'],
				['pseo_posts', 'user_id'],
				['pseo_main_json', 'user_id'],
				['pseo_token_ledger', 'user_id'],
			] as const) {
				const all = await adminItems(directus, collection);
				const res = await call(directus, 'GET', `/items/${collection}?limit=-1`, { token: bob.token });
				expect(res.status).toBe(200);
				const own = all.filter((row) => row[owner] === bob.id);
				expect(res.body.data).toHaveLength(own.length);
				expect(res.body.data.every((row: Record<string, unknown>) => row[owner] === bob.id)).toBe(true);
				if (collection === 'pseo' || collection === 'pseo_token_ledger') {
					expect(own.length).toBeGreaterThan(0);
					expect(all.length).toBeGreaterThan(own.length);
				}
				const count = await call(directus, 'GET', `/items/${collection}?aggregate[count]=*`, { token: bob.token });
				expect(Number(count.body.data[0].count)).toBe(res.body.data.length);
			}
		});

		it('3 a non-admin cannot edit another user\'s website, nor the owner or counters of their own', async () => {
			const bobs = await createWebsite(directus, bob, { website_url: 'https://bob2.example.com' });
			const alices = await createWebsite(directus, alice);
			expect((await call(directus, 'PATCH', `/items/pseo/${bobs.id}`, { token: alice.token, body: { master_prompt: 'hijack' } })).status).toBe(403);
			expect((await call(directus, 'PATCH', `/items/pseo/${alices.id}`, { token: alice.token, body: { post_counts_total: 999 } })).status).toBe(403);
			expect((await call(directus, 'PATCH', `/items/pseo/${alices.id}`, { token: alice.token, body: { backend_user_id: bob.id } })).status).toBe(403);
			const ok = await call(directus, 'PATCH', `/items/pseo/${alices.id}`, { token: alice.token, body: { master_prompt: 'Updated.' } });
			expect(ok.status).toBe(200);
			const [row] = await adminItems(directus, 'pseo', `filter[id][_eq]=${bobs.id}`);
			expect(row.master_prompt).toBe('Write helpful pages.');
		});

		it('3 a non-admin cannot create jobs, plans or ledger rows, nor edit their balance', async () => {
			const website = await createWebsite(directus, alice);
			for (const [collection, body] of [
				['pseo_generations', { pseo_id: website.id, status: 'pending', requested_count: 1 }],
				['pseo_main_json', { pseo_id: website.id }],
				['pseo_token_ledger', { user_id: alice.id, amount: 1000, reason: 'grant' }],
			] as const) {
				expect((await call(directus, 'POST', `/items/${collection}`, { token: alice.token, body })).status).toBe(403);
			}
			const before = await balanceOf(directus, alice.id);
			const res = await call(directus, 'PATCH', '/users/me', { token: alice.token, body: { pseo_token_balance: 1_000_000 } });
			expect(res.status).toBeGreaterThanOrEqual(400);
			expect(await balanceOf(directus, alice.id)).toBe(before);
		});

		it('3 an admin grant is recorded in the ledger as the difference', async () => {
			const carol = await createUser(directus, { balance: 30 });
			const res = await call(directus, 'PATCH', `/users/${carol.id}`, { token: directus.adminToken, body: { pseo_token_balance: 75 } });
			expect(res.status).toBe(200);
			expect(await balanceOf(directus, carol.id)).toBe(75);
			const ledger = await adminItems(directus, 'pseo_token_ledger', `filter[user_id][_eq]=${carol.id}&sort=id`);
			expect(ledger.map((row) => [row.reason, row.amount, row.balance_after])).toEqual([
				['grant', 30, 30],
				['grant', 45, 75],
			]);
			const lower = await call(directus, 'PATCH', `/users/${carol.id}`, { token: directus.adminToken, body: { pseo_token_balance: 5 } });
			expect(lower.status).toBe(200);
			const after = await adminItems(directus, 'pseo_token_ledger', `filter[user_id][_eq]=${carol.id}&sort=id`);
			expect(after.at(-1)).toMatchObject({ reason: 'grant', amount: -70, balance_after: 5 });
			const negative = await call(directus, 'PATCH', `/users/${carol.id}`, { token: directus.adminToken, body: { pseo_token_balance: -1 } });
			expect(negative.status).toBe(400);
			expect(await balanceOf(directus, carol.id)).toBe(5);
		});

		it('3 app users get the pSEO User role with app access', async () => {
			const editor = await createUser(directus, { role: PSEO_USER_ROLE, password: true });
			const login = await call(directus, 'POST', '/auth/login', { body: { email: editor.email, password: editor.password } });
			expect(login.status).toBe(200);
			const collections = await call(directus, 'GET', '/collections', { token: editor.token });
			const names = collections.body.data.map((c: { collection: string }) => c.collection);
			expect(names).toEqual(expect.arrayContaining(['pseo', 'pseo_generations', 'pseo_posts', 'pseo_main_json', 'pseo_token_ledger']));
		});

		it('3 the collections are dressed for editors: names, icons, templates and list columns', async () => {
			const collections = await call(directus, 'GET', '/collections', { token: directus.adminToken });
			const posts = collections.body.data.find((c: { collection: string }) => c.collection === 'pseo_posts');
			expect(posts.meta).toMatchObject({ icon: 'article', display_template: '{{title}}' });
			expect(posts.meta.translations[0]).toMatchObject({ translation: 'Generated posts' });
			const presets = await call(directus, 'GET', '/presets?filter[collection][_eq]=pseo_posts&filter[user][_null]=true', {
				token: directus.adminToken,
			});
			expect(presets.body.data[0].layout_query.tabular.fields).toEqual(expect.arrayContaining(['title', 'route', 'status']));
			const body = await call(directus, 'GET', '/fields/pseo_posts/body', { token: directus.adminToken });
			expect(body.body.data.meta.interface).toBe('input-rich-text-md');
		});

		// A restart needs an instance of its own: the one above is shared with other suites.
		it('1 a restart on the same database keeps every record and changes no schema; a start checks the whole schema only when it changed', async () => {
			// At info, each start logs its install's report (pseo-hook): whether the schema's fingerprint let it skip the check.
			const own = await startDirectus({ leg, env: { LOG_LEVEL: 'info' } });
			try {
				// The template's start-up installed the schema and stored its fingerprint: this first start finds it unchanged.
				expect(installReports(own.output())).toEqual([{ unchanged: true, created: 0, refreshed: [] }]);
				const owner = await createUser(own, { balance: 0 });
				const website = await createWebsite(own, owner, { website_url: 'https://restart.example.com' });
				// An admin edits a field of the extension in the data model: the next start checks the whole schema, as every
				// start did before the fingerprint.
				const edited = await call(own, 'PATCH', '/fields/pseo/website_url', { token: own.adminToken, body: { meta: { note: 'Edited by an admin' } } });
				expect(edited.status).toBe(200);
				expect(await own.stop()).toBe(0);
				await own.restart();
				// The edit changed the fingerprint, so this start read Directus's snapshot again. (Whether the note is put back
				// is Directus's diff's to say: 11.16 and 12.4 report the edit and the install refreshes it; 12.3.1 omits it.)
				const reports = installReports(own.output());
				expect(reports).toHaveLength(2);
				expect(reports[1]).toMatchObject({ unchanged: false, created: 0 });
				const [row] = await adminItems(own, 'pseo', `filter[id][_eq]=${website.id}`);
				expect(row.website_url).toBe('https://restart.example.com');
				const fields = await call(own, 'GET', '/fields/pseo_posts', { token: own.adminToken });
				expect(fields.body.data.map((f: { field: string }) => f.field)).toContain('body');
			} finally {
				await own.dispose();
			}
		});
	});
});

/** The schema install's report of each start in an instance's output (the hook's info line, as JSON lines). */
function installReports(output: string): { unchanged: boolean; created: number; refreshed: string[] }[] {
	return output
		.split('\n')
		.filter((line) => line.startsWith('{') && line.includes('policy are in place'))
		.map((line) => JSON.parse(line) as { unchanged: boolean; created: number; refreshed: string[] })
		.map(({ unchanged, created, refreshed }) => ({ unchanged, created, refreshed }));
}
