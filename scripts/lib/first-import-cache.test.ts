import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { NODE22 } from '../../test/support/paths.ts';

/**
 * The hook runs in a Node 22 of its own, importing a module as Directus imports an extension (its URL with `?t=`):
 * the first import must reach Node's compile cache by the file's own URL, and a later one (a reload) must still get
 * a fresh module.
 */
describe('the first-import hook of the start script', () => {
	const root = mkdtempSync(path.join(os.tmpdir(), 'pseo-first-import-'));
	afterAll(() => rmSync(root, { recursive: true, force: true }));
	const cacheDir = path.join(root, 'compile-cache');
	const extension = path.join(root, 'extension.mjs');
	writeFileSync(extension, 'export const url = import.meta.url;\nexport const loaded = Symbol("a load");\n');
	const hook = pathToFileURL(path.join(import.meta.dirname, 'first-import-cache.mjs')).href;
	const fresh = (t: number) => `${pathToFileURL(extension).href}?t=${t}`;

	/** Imports the file twice, as Directus loads an extension and then reloads it (`?t=` the time of each). */
	function run(env: Record<string, string>, times: [number, number]): { installed: boolean; first: string; second: string; same: boolean; debug: string } {
		const script = `
			const { installFirstImportCache } = await import(${JSON.stringify(hook)});
			const installed = installFirstImportCache();
			const first = await import(${JSON.stringify(fresh(times[0]))});
			const second = await import(${JSON.stringify(fresh(times[1]))});
			console.log(JSON.stringify({ installed, first: first.url, second: second.url, same: first.loaded === second.loaded }));
		`;
		const result = spawnSync(NODE22, ['--input-type=module', '-e', script], { encoding: 'utf8', env: { ...process.env, ...env } });
		if (result.status !== 0) throw new Error(result.stderr);
		return { ...JSON.parse(result.stdout), debug: result.stderr };
	}

	it("imports a file first by its own URL, so that the next process finds it in Node's compile cache, and a reload fresh", () => {
		const answer = run({ NODE_COMPILE_CACHE: cacheDir }, [1, 2]);
		expect(answer.installed).toBe(true);
		expect(answer.first).toBe(pathToFileURL(extension).href);
		expect(answer.second).toBe(fresh(2));
		expect(answer.same).toBe(false);
		// The next start, at another time: its first import is served from the cache the first start wrote.
		const next = run({ NODE_COMPILE_CACHE: cacheDir, NODE_DEBUG_NATIVE: 'COMPILE_CACHE' }, [3, 4]);
		expect(next.first).toBe(pathToFileURL(extension).href);
		expect(next.debug).toContain(`cache for ${pathToFileURL(extension).href} was accepted`);
	});

	it('leaves every URL as it is where the compile cache is off', () => {
		const answer = run({ NODE_COMPILE_CACHE: '' }, [1, 2]);
		expect(answer.installed).toBe(false);
		expect(answer.first).toBe(fresh(1));
		expect(answer.same).toBe(false);
	});
});
