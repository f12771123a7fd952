import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { startFakeProvider, type FakeProvider } from './support/fake-provider/server.ts';
import { adminItems, balanceOf, call, createUser, createWebsite, PSEO_USER_ROLE, waitForJob, type PasswordUser } from './support/api.ts';
import { createCollection, grant, grantRead } from './support/collections.ts';
import { postsByRoute, syncPrices } from './support/synced-data.ts';
import { axeViolations, launchBrowser, recordPageTrouble, screenshot, signIn } from './support/browser.ts';
import { plannedSite } from './support/job-checks.ts';
import { startDirectus, type DirectusInstance } from './support/directus.ts';
import { legAvailable } from './support/legs.ts';
import { ADMIN_EMAIL, ADMIN_PASSWORD } from './support/paths.ts';
import { ensureWordPress, startWordPress, type WordPressSite } from './support/wordpress.ts';

/*
 * The editors' workspace in a real browser (Debian's Chromium, playwright-core) against a real Directus with the
 * built bundle, the fake provider and a real WordPress: an editor with the pSEO User role does the whole workflow in
 * the app, an admin sees their own ledger, every user's by name, and the usage, and a second editor sees none of
 * the first one's data and, with a short balance, Start disabled with the reason; with Anthropic added in Settings →
 * AI, an editor picks it and a model for a website, and the job runs with them and says so. Every screen is scanned with
 * axe-core (no violation of any impact in the module's content and its header title, the `label` rule on) and
 * photographed for the README's gallery.
 */

/** A user id as the ledger stores it: never shown to people. */
const UUID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/i;

const LEG = 'sqlite' as const;
/** The app is heavy to load and render on a shared two-core machine running other suites beside this one. */
const UI_TIMEOUT_MS = 90_000;
vi.setConfig({ testTimeout: 240_000 });
const MODULE = '/admin/pseo-workspace';

describe.skipIf(!legAvailable(LEG))('the editors\' workspace in the app', () => {
	let fake: FakeProvider;
	let wordpress: WordPressSite;
	let directus: DirectusInstance;
	let browser: Browser;
	let editor: PasswordUser;
	let page: Page;
	let csvDir: string;
	/** The plan page whose facts the editor sets, and whose post the reader then shows. */
	let factsRoute = '';

	beforeAll(async () => {
		await ensureWordPress();
		[fake, wordpress] = await Promise.all([startFakeProvider(), startWordPress({ name: 'workspace' })]);
		directus = await startDirectus({
			leg: LEG,
			env: {
				OPENAI_BASE_URL: fake.url,
				// The fake speaks Anthropic's Messages API too, for the provider the last test adds in Settings → AI.
				ANTHROPIC_BASE_URL: fake.url.replace(/\/v1$/, ''),
				PSEO_ALLOW_PRIVATE_NETWORKS: 'true',
				PSEO_PLAN_PAGES: '6',
				PSEO_QUALITY_MIN_WORDS: '0',
				PSEO_PUBLISH_BACKOFF_MS: '50',
				// The one suite that opens the app (the others run without it, see baseEnv).
				SERVE_APP: 'true',
				// Live progress comes through Directus's WebSocket subscriptions here; lib/live-updates.test.ts covers polling.
				WEBSOCKETS_ENABLED: 'true',
			},
		});
		browser = await launchBrowser();
		editor = await createUser(directus, { balance: 1000, role: PSEO_USER_ROLE, password: true });
		csvDir = mkdtempSync(path.join(os.tmpdir(), 'pseo-csv-'));
	}, 300_000);

	afterAll(async () => {
		await browser?.close();
		await directus?.dispose();
		await Promise.all([fake?.close(), wordpress?.stop()]);
		if (csvDir) rmSync(csvDir, { recursive: true, force: true });
	});

	/** Each page's console errors, failed requests and error answers, reported with a screenshot when a test fails. */
	const trouble = new Map<Page, () => string[]>();

	async function newPage(): Promise<Page> {
		const opened = await browser.newPage({ viewport: { width: 1440, height: 1000 }, bypassCSP: true });
		opened.setDefaultTimeout(UI_TIMEOUT_MS);
		trouble.set(opened, recordPageTrouble(opened));
		return opened;
	}

	beforeEach(({ task, onTestFailed }) => {
		onTestFailed(async () => {
			for (const [index, [open, report]] of [...trouble].entries()) {
				if (open.isClosed()) continue;
				await screenshot(open, `failed-${task.name.slice(0, 40).replace(/\W+/g, '-')}-${index}`).catch(() => undefined);
				console.error(`[editor-workspace] page ${index} when "${task.name}" failed:\n${report().join('\n')}`);
			}
		});
	});

	/** Clicks one of the module's buttons: the app's v-button carries the data-test on a wrapper wider than the button. */
	const press = (id: string) => page.locator(`[data-test="${id}"] button, button[data-test="${id}"]`).first().click();

	/**
	 * The text a screen reader reads as the description of an element: that of the elements its own
	 * `aria-describedby` names (checked on the element itself, the real button, not on the app's wrapper around it).
	 */
	const describedBy = (element: ReturnType<Page['locator']>) =>
		element.evaluate((node) => {
			const ids = node.getAttribute('aria-describedby');
			if (!ids) return null;
			return ids
				.split(/\s+/)
				.map((id: string) => node.ownerDocument.getElementById(id)?.textContent?.trim() ?? `(no element #${id})`)
				.join(' ');
		});

	/** The input (or textarea) of one of the module's labelled fields, however the app's component wraps it. */
	const field = (id: string) => page.locator(`input#${id}, textarea#${id}, #${id} input, #${id} textarea`).first();

	/**
	 * axe-core on the module's own content and its title in the header (the app's frame around them is Directus's),
	 * and a screenshot of the screen.
	 */
	async function expectAccessible(name: string, on: Page = page): Promise<void> {
		await screenshot(on, name);
		expect(await axeViolations(on, ['.pseo-page', '.module-title']), name).toEqual([]);
	}

	/** A link's colour and the app's primary colour, as the browser computes them. */
	async function linkStyle(link: ReturnType<Page['locator']>): Promise<{ color: string; primary: string }> {
		return link.evaluate((element) => {
			const view = element.ownerDocument.defaultView!;
			const probe = element.ownerDocument.createElement('span');
			probe.style.color = 'var(--theme--primary)';
			element.parentElement!.append(probe);
			const primary = view.getComputedStyle(probe).color;
			probe.remove();
			return { color: view.getComputedStyle(element).color, primary };
		});
	}

	it('an editor signs in, opens the module and creates a website', async () => {
		page = await newPage();
		await signIn(page, directus.url, editor.email, editor.password);
		await page.goto(`${directus.url}${MODULE}`);
		await page.getByText('No website yet').waitFor();
		expect(await page.locator('[data-test="balance"]').textContent()).toContain('1,000 tokens');
		await expectAccessible('01-websites-empty');

		await press('create-website');
		await page.getByText('Enter the website\'s address.').waitFor();
		await field('pseo-website-url').fill(wordpress.url);
		await field('pseo-master-prompt').fill('Friendly, precise pages for homeowners who need a tradesperson today.');
		await press('create-website');
		await page.waitForURL(new RegExp(`${MODULE}/\\d+$`));
		await page.locator('[data-test="tab-plan"]').waitFor();
		// The header: breadcrumb, separator, title, not one run of text.
		const title = page.locator('.module-title');
		await title.locator('h1').getByText(wordpress.url).waitFor();
		expect(await title.locator('nav[aria-label="Breadcrumb"] a').textContent()).toBe('pSEO websites');
		expect(await title.locator('nav [aria-hidden="true"]').count()).toBe(1);
	});

	it('generates a plan, and imports one from a CSV with a preview of the first routes', async () => {
		await field('pseo-description').fill('We are a family business of plumbers and roofers serving homeowners in Lyon and Paris. We fix leaks, replace boilers, repair roofs and answer emergencies day and night, with fixed prices.');
		expect(await page.locator('[data-test="description-count"]').textContent()).toMatch(/^\d+ \/ 150/);
		expect(await page.locator('[data-test="plan-price"]').textContent()).toContain('20 tokens');
		await press('generate-plan');
		await page.locator('[data-test="plan-message"]').getByText(/A plan of \d+ pages was generated/).waitFor({ timeout: UI_TIMEOUT_MS });
		await page.locator('[data-test="plan-pages"]').waitFor();

		const csv = path.join(csvDir, 'services.csv');
		writeFileSync(csv, 'service,city\nPlumbing,Lyon\nPlumbing,Paris\nRoofing,Lyon\n');
		await page.setInputFiles('[data-test="csv-input"]', csv);
		await page.locator('[data-test="csv-rows"]').getByText('3 rows').waitFor();
		expect(await page.locator('[data-test="import-preview"] li').allTextContents()).toEqual([
			'/plumbing/lyon Plumbing Lyon',
			'/plumbing/paris Plumbing Paris',
			'/roofing/lyon Roofing Lyon',
		]);
		await press('import-plan');
		await page.locator('[data-test="import-message"]').getByText(/3 pages added/).waitFor({ timeout: UI_TIMEOUT_MS });
		await expectAccessible('02-plan');

		// The plan table edits a page's facts in place: the highest-ranked page, which the bulk job below writes.
		const top = page.locator('[data-test="plan-pages"] tbody tr').first();
		factsRoute = (await top.locator('a').first().textContent())!.trim();
		await top.locator('button[data-test^="edit-facts-"]').click();
		await page.locator('[data-test="facts-input"]').fill('{"prices": {"from": 1}}');
		await press('facts-save');
		await page.locator('[data-test="facts-problem"]').getByText(/"facts.prices" must be a string, a number or a boolean/).waitFor();
		await page.locator('[data-test="facts-input"]').fill('{"city": "Lyon", "founded": 1998}');
		await press('facts-save');
		await page.locator('[data-test="facts-message"]').getByText(/Facts saved/).waitFor({ timeout: UI_TIMEOUT_MS });
		await top.locator('span[data-test^="facts-"]').first().getByText('city: Lyon, founded: 1998', { exact: true }).waitFor({ timeout: UI_TIMEOUT_MS });

		await page.click('[data-test="tab-sitemap"]');
		await press('fetch-sitemap');
		await page.locator('[data-test="sitemap-count"], [data-test="sitemap-error"]').first().waitFor({ timeout: UI_TIMEOUT_MS });
		await expectAccessible('08-sitemap');
	});

	it('starts a bulk job and sees its progress bar reach 100 % without a reload, through the WebSocket subscription', async () => {
		// What Directus pushes to the page: subscription events about jobs, each of which the module answers with one read.
		const pushed: string[] = [];
		page.on('websocket', (socket) => socket.on('framereceived', (frame) => pushed.push(String(frame.payload))));
		await page.click('[data-test="tab-generate"]');
		await field('pseo-pages').fill('3');
		await page.locator('[data-test="cost"]').getByText('15 tokens').waitFor();
		await expectAccessible('03-generate');
		await press('start-job');
		const job = page.locator('[data-test^="job-"]').first();
		await job.locator('[data-test="percent"]').getByText('100 %').waitFor({ timeout: UI_TIMEOUT_MS });
		// The last page is counted before the job ends, in a write of its own, so 100 % can show while the job is
		// still running: the completed status comes with the next pushed change, still without a reload.
		await vi.waitFor(async () => expect(await job.getAttribute('data-status')).toBe('completed'), { timeout: UI_TIMEOUT_MS, interval: 100 });
		expect(await page.locator('[data-live]').getAttribute('data-live')).toBe('websocket');
		const events = pushed.map((frame) => JSON.parse(frame) as { type: string; event?: string }).filter((message) => message.type === 'subscription');
		expect(events.map((message) => message.event)).toContain('update');
		await expectAccessible('04-jobs');
	});

	it('cancels a running job, and retries a partly failed one', async () => {
		fake.configure({ holdBatches: true });
		await page.click('[data-test="tab-generate"]');
		await field('pseo-pages').fill('2');
		await press('start-job');
		const held = page.locator('[data-test^="job-"][data-status="running"], [data-test^="job-"][data-status="pending"]').first();
		await held.waitFor({ timeout: UI_TIMEOUT_MS });
		await held.locator('[data-test^="cancel-"] button').click();
		await page.locator('[data-test^="job-"][data-status="failed"]').first().waitFor({ timeout: UI_TIMEOUT_MS });
		fake.configure({ holdBatches: false, failRoutes: { '/plumbing/lyon': 'error', '/plumbing/paris': 'error', '/roofing/lyon': 'error' } });

		await page.click('[data-test="tab-generate"]');
		await field('pseo-pages').fill('6');
		await press('start-job');
		const partly = page.locator('[data-test^="job-"]').first();
		await partly.locator('[data-test^="retry-"]').waitFor({ timeout: UI_TIMEOUT_MS });
		expect(await partly.getAttribute('data-status')).toBe('failed');
		fake.configure({ failRoutes: {} });
		const completedBefore = await page.locator('[data-test^="job-"][data-status="completed"]').count();
		await partly.locator('[data-test^="retry-"] button').click();
		// The retry is a new job: it appears first, and completes with the pages that failed.
		await page.locator('[data-test^="job-"][data-status="completed"]').nth(completedBefore).waitFor({ timeout: UI_TIMEOUT_MS });
		expect(await page.locator('[data-test^="job-"]').first().getAttribute('data-status')).toBe('completed');
		expect(await page.locator('[data-test^="job-"]').first().locator('[data-test="percent"]').textContent()).toBe('100 %');
	});

	it('reads a post safely and regenerates it with instructions', async () => {
		await page.click('[data-test="tab-posts"]');
		await page.locator('[data-test="posts"]').waitFor();
		await page.locator('[data-test="posts"] tbody tr button.open', { hasText: factsRoute }).first().click();
		await page.locator('[data-test="reader"]').waitFor();
		expect(await page.locator('[data-test="reader"] script').count()).toBe(0);
		// The data block as the website will show it: the facts the page was written from.
		expect(await page.locator('[data-test="facts-table"] th').allTextContents()).toEqual(['City', 'Founded']);
		expect(await page.locator('[data-test="facts-table"] td').allTextContents()).toEqual(['Lyon', '1998']);
		expect(await page.locator('[data-test="structured-data"] summary').textContent()).toContain('Article');
		await field('pseo-instructions').fill('Mention the weekend opening hours.');
		await press('regenerate');
		await page.locator('[data-test="regenerate-message"]').getByText(/Regeneration started/).waitFor({ timeout: UI_TIMEOUT_MS });
		await expectAccessible('05-post-reader');
		await page.keyboard.press('Escape');
	});

	it('saves the publishing target and publishes every post to WordPress', async () => {
		await page.click('[data-test="tab-publishing"]');
		await field('pseo-target-url').fill(wordpress.url);
		await field('pseo-target-user').fill(wordpress.username);
		await field('pseo-target-secret').fill(wordpress.applicationPassword);
		await press('save-target');
		await page.locator('[data-test="target-message"]').getByText(/Saved/).waitFor({ timeout: UI_TIMEOUT_MS });
		expect(await field('pseo-target-secret').inputValue()).toBe('');
		await expectAccessible('06-publishing');

		await page.click('[data-test="tab-posts"]');
		// Nothing is stale yet: Refresh is disabled, and its real button names the reason.
		const refresh = page.locator('[data-test="refresh-stale"] button').first();
		await page.locator('[data-test="refresh-blocked"]').waitFor();
		expect(await refresh.isDisabled()).toBe(true);
		expect(await describedBy(refresh)).toBe('No post is stale: a sync import marks the posts whose data changed.');
		await press('publish-all');
		await page.locator('[data-test="publication"][data-status="completed"]').waitFor({ timeout: UI_TIMEOUT_MS });
		await expectAccessible('09-posts');
		const posts = await wordpress.listPosts();
		expect(posts.length).toBeGreaterThanOrEqual(9);
		expect(new Set(posts.map((post) => post.slug)).size).toBe(posts.length);
	});

	it('reads the balance change in the header and the ledger', async () => {
		const balance = await balanceOf(directus, editor.id);
		expect(balance).toBeLessThan(1000);
		await page.goto(`${directus.url}${MODULE}`);
		await page.locator('[data-test="websites"]').waitFor();
		// The website's address is a link in the app's link style.
		const link = await linkStyle(page.locator('[data-test="websites"] tbody a').first());
		expect(link.color).toBe(link.primary);
		await expectAccessible('10-websites');

		await page.goto(`${directus.url}${MODULE}/ledger`);
		await page.locator('[data-test="ledger"]').waitFor();
		await page.locator('[data-test="balance"]').getByText(`${balance.toLocaleString('en-US')} tokens`).waitFor();
		// The editor's own entries: websites by their address, times as "… ago" with the exact time on hover.
		const ledger = page.locator('[data-test="ledger"]');
		expect(await ledger.getByRole('link', { name: wordpress.url }).count()).toBeGreaterThan(0);
		expect(await ledger.locator('time').first().getAttribute('title')).toMatch(/\d{4}/);
		expect(await ledger.locator('time').first().textContent()).toMatch(/ago|now/);
		expect(await ledger.textContent()).not.toMatch(UUID);
		expect(await page.locator('[data-test="ledger-scope-all"]').count()).toBe(0);
		await expectAccessible('07-ledger');
	});

	it('an admin sees their own ledger, every user\'s by name with filters, and the usage per website and day', async () => {
		// Directus 12 asks the admins of a new project two questions in dialogs over whichever screen of the app they
		// open, this module's included: how the project is used (the licence onboarding, "Skip" or "Save") and then who
		// owns it ("Remind Later" or "Set Owner"). The app's private view opens the first while directus_settings has no
		// project_usage, the second while it has no project_owner, each unless this browser holds the cookie its
		// "Skip"/"Remind Later" leaves (app/src/views/private/private-view/components/private-view.vue). A real admin
		// answers once for the whole project, and this one does too, before signing in: the same two settings the
		// dialogs save (the owner dialog posts to /settings/owner, which also reports the owner to Directus; PATCH
		// stores it without the report). Waiting for the dialogs and clicking them away raced their opening and their
		// scaling in, and one left open covered the page.
		const answered = await call(directus, 'PATCH', '/settings', {
			token: directus.adminToken,
			body: { project_usage: 'personal', project_owner: ADMIN_EMAIL },
		});
		expect(answered.status).toBe(200);
		const admin = await newPage();
		await signIn(admin, directus.url, ADMIN_EMAIL, ADMIN_PASSWORD);
		await admin.goto(`${directus.url}${MODULE}/ledger`);
		// Their own ledger first: the admin was never granted nor charged anything.
		const own = admin.locator('[data-test="ledger-own"]');
		await own.getByText('No entry').waitFor({ timeout: UI_TIMEOUT_MS });
		expect(await own.locator('[data-test="ledger"]').count()).toBe(0);
		// No dialog of the app over the ledger: the private view decides its dialogs as it renders, from the user,
		// settings, server and licence stores the app loads before any route, so by the time the module's content shows
		// one would be there. Its text, if any, says which.
		const outlet = admin.locator('#dialog-outlet');
		expect(await outlet.locator(':scope > *').count(), await outlet.innerText()).toBe(0);

		await admin.click('[data-test="ledger-scope-all"]');
		const all = admin.locator('[data-test="ledger-all"] [data-test="ledger"]');
		await all.waitFor({ timeout: UI_TIMEOUT_MS });
		expect(await all.locator('th').allTextContents()).toContain('User');
		expect(await all.locator('[data-test="ledger-user"]').allTextContents()).toContain(editor.email);
		expect(await all.textContent()).not.toMatch(UUID);
		await expectAccessible('11-ledger-all-users', admin);

		// Filtered to the editor's grants: the note names who set the balance, never by id (this admin: "you").
		await admin.selectOption('#pseo-ledger-user', { label: editor.email });
		await admin.selectOption('#pseo-ledger-reason', 'grant');
		await vi.waitFor(async () => expect(await all.locator('tbody td:nth-child(5)').allTextContents()).toEqual(['grant']), { timeout: UI_TIMEOUT_MS, interval: 200 });
		expect(await all.locator('[data-test="ledger-user"]').allTextContents()).toEqual([editor.email]);
		expect(await all.locator('tbody td:last-child').textContent()).toBe('initial balance set by you');
		expect(await admin.locator('[data-test="page-status"]').textContent()).toMatch(/^Page 1 of 1 · 1 entry$/);

		const usage = admin.locator('[data-test="usage"]');
		const chart = usage.locator('[data-test="usage-chart"]').first();
		await chart.waitFor({ timeout: UI_TIMEOUT_MS });
		expect(await chart.locator('figcaption a').textContent()).toBe(wordpress.url);
		expect(await chart.locator('svg rect').count()).toBeGreaterThan(0);
		expect(await usage.locator('[data-test="usage-dashboard"]').getAttribute('href')).toMatch(/\/insights\/6f1d3a2e-6c1b-4a3e-9a57-0b9e6c0d5a01$/);
		await usage.scrollIntoViewIfNeeded();
		await expectAccessible('12-usage', admin);
		await admin.close();
	});

	it('a second editor sees none of the first one\'s data, and with a short balance Start is disabled with the reason', async () => {
		const other = await createUser(directus, { balance: 10, role: PSEO_USER_ROLE, password: true });
		const second = await newPage();
		await signIn(second, directus.url, other.email, other.password);
		await second.goto(`${directus.url}${MODULE}`);
		await second.getByText('No website yet').waitFor();
		expect(await second.locator('[data-test="websites"]').count()).toBe(0);

		// A website with a plan of three pages, which three bulk pages at 5 tokens (15) would need.
		const site = await plannedSite(directus, other, 3);
		await second.goto(`${directus.url}${MODULE}/${site.pseoId}`);
		await second.click('[data-test="tab-generate"]');
		await second.locator('input#pseo-pages').fill('3');
		await second.locator('[data-test="cost"]').getByText('15 tokens').waitFor();
		const reason = second.locator('[data-test="start-blocked"]');
		await reason.getByText('Start needs 5 more tokens').waitFor();
		const start = second.locator('[data-test="start-job"] button, button[data-test="start-job"]').first();
		expect(await start.isDisabled()).toBe(true);
		expect(await describedBy(start)).toContain('Start needs 5 more tokens');
		await expectAccessible('13-generate-blocked', second);
		await second.close();
	});

	it('an editor sees the posts a sync made stale and what changed in their data, refreshes them, and reads the new figure', async () => {
		// Two priced pages imported as the source "prices" and written by a bulk job; the editor then syncs a CSV of
		// the same source in the Plan tab, with one price changed and the other row gone.
		// The first editor's (the instance's seats are few): a website of their own.
		const owner = editor;
		const { id: pseoId } = await createWebsite(directus, owner, { website_url: wordpress.url });
		expect((await syncPrices(directus, owner, pseoId, [{ city: 'Ripon', rank: 2, price_eur: 240 }, { city: 'Whitby', rank: 1, price_eur: 180 }])).body.data).toMatchObject({ added: 2 });
		const bulk = await call(directus, 'POST', '/pseo-endpoints/trigger/bulk-generation', { token: owner.token, body: { pseo_id: pseoId, post_count: 2 } });
		expect(bulk.status).toBe(202);
		expect((await waitForJob(directus, owner, bulk.body.generation_id)).status).toBe('completed');
		const on = page;
		await on.goto(`${directus.url}${MODULE}/${pseoId}`);
		const csv = path.join(csvDir, 'prices.csv');
		writeFileSync(csv, 'city,rank,price_eur\nRipon,2,265\n');
		await on.setInputFiles('[data-test="csv-input"]', csv);
		await on.locator('[data-test="csv-rows"]').getByText('1 rows').waitFor();
		await field('pseo-template-route').fill('/{city}');
		await field('pseo-template-title').fill('Plumbers in {city}');
		await field('pseo-template-facts').fill('city, price_eur');
		await on.selectOption('#pseo-import-mode', 'sync');
		await field('pseo-import-source').fill('prices');
		await press('import-plan');
		await on.locator('[data-test="import-message"]').getByText(/0 pages added, 1 updated, 0 unchanged, 1 retired/).waitFor({ timeout: UI_TIMEOUT_MS });
		const posts = await postsByRoute(directus, pseoId);
		const stale = posts.get('/ripon')!;
		const retired = posts.get('/whitby')!;
		expect([stale.stale, retired.retired]).toEqual([true, true]);

		await on.click('[data-test="tab-posts"]');
		await on.locator(`[data-test="stale-${stale.id}"]`).getByText('Stale').waitFor();
		expect(await on.locator(`[data-test="retired-${retired.id}"]`).textContent()).toBe('Retired');
		const refresh = on.locator('[data-test="refresh-stale"] button').first();
		await on.locator('[data-test="cost"]').getByText('5 tokens').waitFor();
		expect((await refresh.textContent())!.trim()).toBe('Refresh 1 stale page');
		expect(await refresh.isDisabled()).toBe(false);
		expect(await refresh.getAttribute('aria-describedby')).toBeNull();
		await expectAccessible('15-posts-stale', on);

		// The reader sets the price the post was written from beside the price the data holds now.
		await on.click(`[data-test="open-${stale.id}"]`);
		const changed = on.locator('[data-test="fact-changes"] tbody tr');
		await changed.first().waitFor();
		expect(await changed.first().locator('th, td').allTextContents()).toEqual(['Price eur', '240', '265']);

		await on.reload();
		await on.click('[data-test="tab-posts"]');
		await on.locator('[data-test="refresh-stale"] button').first().click();
		const job = on.locator('[data-test^="job-"]').first();
		await job.locator('[data-test="percent"]').getByText('100 %').waitFor({ timeout: UI_TIMEOUT_MS });
		await vi.waitFor(async () => expect(await job.getAttribute('data-status')).toBe('completed'), { timeout: UI_TIMEOUT_MS, interval: 100 });
		expect(await job.locator('[data-test="job-kind"]').textContent()).toBe('Refresh of stale pages');
		await on.click('[data-test="tab-posts"]');
		await on.click(`[data-test="open-${stale.id}"]`);
		await on.locator('[data-test="reader"]').getByText(/price eur here is 265/).waitFor();
		expect(await on.locator(`[data-test="stale-${stale.id}"]`).count()).toBe(0);
	});

	it('an editor imports a plan from a collection they may read, a related item\'s field by its path, with a preview of the first pages', async () => {
		// An admin keeps towns in Directus, each pointing to its region, and lets the editor read both.
		const towns = `towns_${process.pid}`;
		const regions = `regions_${process.pid}`;
		await createCollection(directus, regions, [{ field: 'name', type: 'string' }]);
		await createCollection(directus, towns, [
			{ field: 'name', type: 'string' },
			{ field: 'population', type: 'integer' },
			{ field: 'region', type: 'integer' },
		]);
		expect((await call(directus, 'POST', '/relations', { token: directus.adminToken, body: { collection: towns, field: 'region', related_collection: regions } })).status).toBe(200);
		const somerset = (await call(directus, 'POST', `/items/${regions}`, { token: directus.adminToken, body: { name: 'Somerset' } })).body.data.id;
		for (const [name, population] of [['Bath', 94_000], ['Frome', 28_000]] as const) {
			await call(directus, 'POST', `/items/${towns}`, { token: directus.adminToken, body: { name, population, region: somerset } });
		}
		await grantRead(directus, editor, [
			{ collection: towns, fields: ['*'] },
			{ collection: regions, fields: ['*'] },
		]);
		const { id: pseoId } = await createWebsite(directus, editor, { website_url: wordpress.url });
		await page.goto(`${directus.url}${MODULE}/${pseoId}`);

		await page.selectOption('#pseo-data-collection', towns);
		// A first template from the collection's first field, then the editor's own with the region's name.
		await expect.poll(() => field('pseo-template-route').inputValue(), { timeout: UI_TIMEOUT_MS }).toBe('/{name}');
		await field('pseo-template-title').fill('Plumbers in {name}, {region.name}');
		await field('pseo-template-facts').fill('population, region.name');
		await page.locator('[data-test="import-preview"] li').first().getByText('Plumbers in Bath, Somerset').waitFor({ timeout: UI_TIMEOUT_MS });
		expect(await page.locator('[data-test="import-preview"] li').allTextContents()).toEqual(['/bath Plumbers in Bath, Somerset', '/frome Plumbers in Frome, Somerset']);
		await expectAccessible('16-plan-collection');
		await press('import-plan');
		await page.locator('[data-test="import-message"]').getByText(/2 pages added/).waitFor({ timeout: UI_TIMEOUT_MS });
		expect(await adminItems(directus, 'pseo_plan_pages', `filter[pseo_id][_eq]=${pseoId}&fields=route,facts&sort=id`)).toEqual([
			{ route: '/bath', facts: { population: 94_000, 'region.name': 'Somerset' } },
			{ route: '/frome', facts: { population: 28_000, 'region.name': 'Somerset' } },
		]);
	});

	it('an editor follows a collection, changes an item in the app\'s own item page, and sees its page go stale, then fresh after a refresh', async () => {
		// The admin keeps shops in Directus and lets the editor read and edit them.
		const shops = `shops_${process.pid}`;
		await createCollection(directus, shops, [
			{ field: 'name', type: 'string' },
			{ field: 'price', type: 'integer' },
		]);
		const created = await call(directus, 'POST', `/items/${shops}`, { token: directus.adminToken, body: [{ name: 'Acorn', price: 120 }, { name: 'Birch', price: 90 }] });
		const acorn = (created.body.data as { id: number; name: string }[]).find((shop) => shop.name === 'Acorn')!.id;
		await grant(directus, editor, (['read', 'update'] as const).map((action) => ({ collection: shops, action })));
		const { id: pseoId } = await createWebsite(directus, editor, { website_url: wordpress.url });
		await page.goto(`${directus.url}${MODULE}/${pseoId}`);
		await page.locator('[data-test="following-none"]').waitFor({ timeout: UI_TIMEOUT_MS });

		await page.selectOption('#pseo-data-collection', shops);
		await expect.poll(() => field('pseo-template-route').inputValue(), { timeout: UI_TIMEOUT_MS }).toBe('/{name}');
		await page.locator('[data-test="collection-paths"]').getByText('price', { exact: true }).waitFor({ timeout: UI_TIMEOUT_MS });
		await field('pseo-template-title').fill('Shop {name}');
		await field('pseo-template-facts').fill('name, price');
		await field('pseo-import-source').fill('shops');
		await page.check('#pseo-follow');
		expect(await page.locator('#pseo-import-mode').isDisabled()).toBe(true);
		await press('import-plan');
		await page.locator('[data-test="import-message"]').getByText(/2 pages added.*now follows/).waitFor({ timeout: UI_TIMEOUT_MS });
		await page.locator('[data-test="following-state"]').getByText(shops).waitFor({ timeout: UI_TIMEOUT_MS });
		await expectAccessible('17-plan-following');

		const bulk = await call(directus, 'POST', '/pseo-endpoints/trigger/bulk-generation', { token: editor.token, body: { pseo_id: pseoId, post_count: 2 } });
		expect((await waitForJob(directus, editor, bulk.body.generation_id)).status).toBe('completed');
		const post = (await postsByRoute(directus, pseoId)).get('/acorn')!;

		// The editor changes Acorn's price where Directus edits items: its own item page, saved with its shortcut.
		await page.goto(`${directus.url}/admin/content/${shops}/${acorn}`);
		const price = page.locator('.field').filter({ hasText: 'Price' }).locator('input').first();
		await price.waitFor({ timeout: UI_TIMEOUT_MS });
		await price.fill('135');
		await page.keyboard.press('Control+s');
		await expect.poll(async () => (await call(directus, 'GET', `/items/${shops}/${acorn}`, { token: directus.adminToken })).body.data.price, { timeout: UI_TIMEOUT_MS }).toBe(135);

		// Back in the module: the sync made its post stale, without a click there.
		await page.goto(`${directus.url}${MODULE}/${pseoId}`);
		await page.locator('[data-test="following-last-sync"]').getByText(/1 updated/).waitFor({ timeout: UI_TIMEOUT_MS });
		await page.click('[data-test="tab-posts"]');
		await page.locator(`[data-test="stale-${post.id}"]`).getByText('Stale').waitFor({ timeout: UI_TIMEOUT_MS });
		await expectAccessible('18-posts-following-stale');
		await page.locator('[data-test="refresh-stale"] button').first().click();
		const job = page.locator('[data-test^="job-"]').first();
		await vi.waitFor(async () => expect(await job.getAttribute('data-status')).toBe('completed'), { timeout: UI_TIMEOUT_MS, interval: 100 });
		await page.click('[data-test="tab-posts"]');
		await page.click(`[data-test="open-${post.id}"]`);
		await page.locator('[data-test="reader"]').getByText(/price here is 135/).waitFor({ timeout: UI_TIMEOUT_MS });
		expect(await page.locator(`[data-test="stale-${post.id}"]`).count()).toBe(0);
		await call(directus, 'PATCH', `/items/pseo/${pseoId}`, { token: directus.adminToken, body: { data_source: null } });
	});

	it('an editor picks Anthropic and a model for a website, and its job runs with them and says so', async () => {
		// A second provider, from Settings → AI (the environment has OpenAI's key): saved by the admin, taken away after.
		const settings = (body: Record<string, unknown>) => call(directus, 'PATCH', '/settings', { token: directus.adminToken, body });
		expect((await settings({ ai_anthropic_api_key: 'sk-ant-workspace-3b9e1c', ai_anthropic_allowed_models: ['claude-haiku-4-5', 'claude-sonnet-4-6'] })).status).toBe(200);
		try {
			const site = await plannedSite(directus, editor, 1);
			await page.goto(`${directus.url}${MODULE}/${site.pseoId}`);
			await page.click('[data-test="tab-ai"]');
			const provider = page.locator('select#pseo-provider');
			expect(await provider.locator('option').allTextContents()).toEqual([
				'Default (OpenAI · gpt-5.4-mini)',
				'OpenAI',
				'Anthropic',
				'Google (not configured)',
				'OpenAI-compatible server (not configured)',
			]);
			await provider.selectOption('anthropic');
			const model = page.locator('select#pseo-model');
			expect(await model.locator('option').allTextContents()).toEqual(['Default (claude-haiku-4-5)', 'claude-haiku-4-5', 'claude-sonnet-4-6']);
			await model.selectOption('claude-sonnet-4-6');
			await press('save-ai');
			await page.locator('[data-test="ai-message"]').getByText(/Saved/).waitFor({ timeout: UI_TIMEOUT_MS });
			await expectAccessible('14-ai');

			await page.click('[data-test="tab-generate"]');
			const run = page.locator('[data-test="ai-run"]');
			await run.getByText('Anthropic · claude-sonnet-4-6').waitFor();
			expect(await run.textContent()).toContain("Bulk jobs run through the provider's batch API.");
			await page.selectOption('#pseo-mode', 'on_demand');
			await page.locator('[data-test="cost"]').getByText('10 tokens').waitFor();
			await press('start-job');
			const job = page.locator('article[data-test^="job-"]').first();
			await job.locator('[data-test="provider-model"]').getByText('Anthropic · claude-sonnet-4-6', { exact: true }).waitFor({ timeout: UI_TIMEOUT_MS });
			await vi.waitFor(async () => expect(await job.getAttribute('data-status')).toBe('completed'), { timeout: UI_TIMEOUT_MS, interval: 200 });
			const id = Number((await job.getAttribute('data-test'))!.replace('job-', ''));
			const record = await call(directus, 'GET', `/pseo-endpoints/generations/${id}`, { token: editor.token });
			expect(record.body.data).toMatchObject({ provider: 'anthropic', model: 'claude-sonnet-4-6', created_count: 1 });
		} finally {
			await settings({ ai_anthropic_api_key: null, ai_anthropic_allowed_models: null });
		}
	});
});
