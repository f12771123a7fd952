import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { ROOT } from './paths.ts';

/*
 * A real browser for the editors' workspace: Debian's Chromium driven by playwright-core (playwright's own browser
 * download reaches outside and is not used). Installed with apt-get when missing, as .ci/run does.
 */

const CHROMIUM = '/usr/bin/chromium';

/** Where the end-to-end run leaves its screenshots (git-ignored). */
const SCREENSHOT_DIR = path.join(ROOT, 'test-results', 'screenshots');

function ensureChromium(): void {
	if (existsSync(CHROMIUM)) return;
	if (process.getuid?.() !== 0) throw new Error(`${CHROMIUM} is missing; install Debian's chromium package (apt-get install chromium)`);
	const update = spawnSync('apt-get', ['update', '-qq'], { stdio: 'inherit' });
	const install = spawnSync('apt-get', ['install', '-y', '-qq', 'chromium'], { stdio: 'inherit', env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' } });
	if (update.status !== 0 || install.status !== 0 || !existsSync(CHROMIUM)) throw new Error('installing Debian\'s chromium package failed');
}

export async function launchBrowser(): Promise<Browser> {
	ensureChromium();
	// --no-sandbox: the suites run as root, where Chromium's sandbox refuses to start.
	// --disable-3d-apis: without a GPU, Chromium draws WebGL on the CPU (SwiftShader), and the app's login screen
	// animates a WebGL shader behind its form at every frame until the sign-in leaves it. That is Directus's own art,
	// not the module under test; without WebGL the screen shows its plain background. It was a quarter of the
	// browser's CPU in the suite (72.6 s, then 52.6 s, in two runs of the suite alone), and its tests took 79 s, then 70 s.
	return chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox', '--disable-dev-shm-usage', '--disable-3d-apis'] });
}

/** Signs in to the Directus app as `email` and waits for the app to be ready. */
export async function signIn(page: Page, baseUrl: string, email: string, password: string): Promise<void> {
	await page.goto(`${baseUrl}/admin/login`);
	await page.fill('input[type=email]', email);
	await page.fill('input[type=password]', password);
	await page.click('button[type=submit]');
	await page.waitForURL((url) => !url.pathname.endsWith('/login'), { timeout: 90_000 });
}

const axeSource = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

export interface AxeViolation {
	id: string;
	impact: string | null;
	help: string;
	nodes: string[];
}

/**
 * Runs axe-core in the page (opened with `bypassCSP`: Directus's Content-Security-Policy forbids the inline script
 * that carries axe) on `include`, selectors of the parts to judge (those present), or the whole page, and returns
 * its violations of every impact, minor ones included. The `label` rule (every form field has a label bound to
 * it) is named on, so that a change of axe's defaults cannot turn it off unnoticed.
 */
export async function axeViolations(page: Page, include: string[] = []): Promise<AxeViolation[]> {
	// A message fading in is mid-transition: its colours are not yet the ones the screen settles on, and axe would
	// judge the contrast of a half-transparent text (seen once under load, on the plan screen's import message).
	// Spinners loop forever and are left out; a finite transition still running after 5 s is judged as it stands.
	type Running = { playState: string; effect: { getTiming(): { iterations: number } } | null };
	await page
		.waitForFunction(
			() =>
				(globalThis as unknown as { document: { getAnimations(): Running[] } }).document
					.getAnimations()
					.every((animation) => animation.playState !== 'running' || animation.effect?.getTiming().iterations === Infinity),
			null,
			{ timeout: 5000 },
		)
		.catch(() => {});
	await page.addScriptTag({ content: axeSource });
	return (await page.evaluate(async (selectors) => {
		const scope = globalThis as unknown as {
			axe: { run(context: unknown, options: unknown): Promise<{ violations: { id: string; impact: string | null; help: string; nodes: { target: unknown[] }[] }[] }> };
			document: { querySelector(selector: string): unknown };
		};
		const present = selectors.filter((selector) => scope.document.querySelector(selector) !== null);
		const context = present.length > 0 ? { include: present.map((selector) => [selector]) } : scope.document;
		const result = await scope.axe.run(context, { resultTypes: ['violations'], rules: { label: { enabled: true } } });
		return result.violations.map((violation) => ({ id: violation.id, impact: violation.impact, help: violation.help, nodes: violation.nodes.map((node) => node.target.join(' ')) }));
	}, include)) as AxeViolation[];
}

/**
 * What a page said while a test drove it: console errors, uncaught errors, failed and refused requests. A browser
 * test that times out waiting for a screen reports these, so a failure in CI says why the screen never came.
 */
export function recordPageTrouble(page: Page): () => string[] {
	const trouble: string[] = [];
	const note = (line: string) => {
		if (trouble.length < 200) trouble.push(`${new Date().toISOString()} ${line}`);
	};
	page.on('console', (message) => {
		// The app's 3D login art warns about the headless GPU on every run; that is noise, not trouble.
		if (/GL Driver Message|WebGPU|No available adapters/.test(message.text())) return;
		if (message.type() === 'error' || message.type() === 'warning') note(`console.${message.type()}: ${message.text()}`);
	});
	page.on('pageerror', (error) => note(`pageerror: ${error.message}`));
	page.on('requestfailed', (request) => note(`requestfailed: ${request.method()} ${request.url()} ${request.failure()?.errorText ?? ''}`));
	page.on('response', (response) => {
		if (response.status() >= 400) note(`response ${response.status()}: ${response.request().method()} ${response.url()}`);
	});
	return () => [`url: ${page.url()}`, ...trouble];
}

/** Saves a screenshot of the page under test-results/screenshots. */
export async function screenshot(page: Page, name: string): Promise<string> {
	mkdirSync(SCREENSHOT_DIR, { recursive: true });
	const file = path.join(SCREENSHOT_DIR, `${name}.png`);
	await page.screenshot({ path: file });
	return file;
}
