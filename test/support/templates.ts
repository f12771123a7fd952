import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { recordBoot } from './boot-log.ts';
import { baseEnv, freePort } from './instance.ts';
import { ADMIN_TOKEN, NODE22, ROOT, START_SCRIPT } from './paths.ts';

/** Builds the extension bundle into dist/ (what every instance installs). */
export function buildExtension(): void {
	const result = spawnSync(NODE22, [path.join(ROOT, 'node_modules/@directus/extensions-sdk/cli.js'), 'build', '--no-minify'], {
		cwd: ROOT,
		encoding: 'utf8',
	});
	if (result.status !== 0) throw new Error(`extension build failed:\n${result.stdout}\n${result.stderr}`);
}

/** Runs the start script until Directus answers (schema and policies are installed at start-up), then stops it. */
export async function bootstrapTemplate(dbEnv: Record<string, string>): Promise<void> {
	const port = await freePort();
	// Templates are bootstrapped side by side: each has its own uploads and temp folders (the extensions folder is
	// the run's shared one, which no start writes to).
	const workDir = mkdtempSync(path.join(os.tmpdir(), 'pseo-template-work-'));
	const child = spawn(process.execPath, [START_SCRIPT, '--skip-build'], {
		cwd: ROOT,
		env: { ...process.env, ...baseEnv(port, workDir), ...dbEnv },
		stdio: ['ignore', 'pipe', 'pipe'],
	});
	let log = '';
	const began = performance.now();
	child.stdout.on('data', (chunk: Buffer) => (log += chunk));
	child.stderr.on('data', (chunk: Buffer) => (log += chunk));
	const deadline = Date.now() + 180_000;
	for (;;) {
		if (child.exitCode !== null) throw new Error(`template bootstrap failed:\n${log}`);
		if (Date.now() > deadline) throw new Error(`template bootstrap timed out:\n${log}`);
		const ok = await fetch(`http://127.0.0.1:${port}/pseo-endpoints/`).then((r) => r.ok, () => false);
		if (ok) break;
		await new Promise((resolve) => setTimeout(resolve, 200));
	}
	recordBoot(`template ${dbEnv['DB_CLIENT']}`, performance.now() - began);
	// The admin's static token must work on every copy.
	const me = await fetch(`http://127.0.0.1:${port}/users/me`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
	if (!me.ok) throw new Error(`template admin token does not work (${me.status}):\n${log}`);
	// The extension installs its schema at start-up and only logs a failure; a template without it is no template.
	const schema = await fetch(`http://127.0.0.1:${port}/collections/pseo`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
	if (!schema.ok) throw new Error(`the extension's schema is missing from the template (${schema.status}):\n${log}`);
	await new Promise<void>((resolve) => {
		child.once('exit', () => resolve());
		child.kill('SIGTERM');
	});
	rmSync(workDir, { recursive: true, force: true });
}
