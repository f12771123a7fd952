import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { NODE22 } from '../../test/support/paths.ts';

/**
 * The hook runs in a Node 22 of its own on a tree of packages on disk: what it answers itself must be what Node
 * answers (the same module, by the same URL), and what it cannot answer exactly must reach Node. A counting hook
 * registered before it sees every specifier the hook passes on, and none it answers.
 */
describe('the module format hook of the start script', () => {
	const root = mkdtempSync(path.join(os.tmpdir(), 'pseo-format-hook-'));
	afterAll(() => rmSync(root, { recursive: true, force: true }));

	const write = (file: string, text: string) => {
		mkdirSync(path.dirname(path.join(root, file)), { recursive: true });
		writeFileSync(path.join(root, file), text);
	};
	// An ES package importing a sibling file, a folder whose package.json names no type, and a package reached
	// through a symbolic link.
	write('node_modules/esm-pkg/package.json', '{"name":"esm-pkg","type":"module"}');
	write('node_modules/esm-pkg/index.js', "export { b } from './b.js';\nexport { default as c } from './sub/c.js';\nexport { e } from '../linked/e.js';\n");
	write('node_modules/esm-pkg/b.js', 'export const b = import.meta.url;\n');
	write('node_modules/esm-pkg/sub/package.json', '{"sideEffects":false}');
	write('node_modules/esm-pkg/sub/c.js', 'module.exports = "commonjs";\n');
	write('node_modules/real-pkg/package.json', '{"name":"real-pkg","type":"module"}');
	write('node_modules/real-pkg/e.js', 'export const e = import.meta.url;\n');
	symlinkSync(path.join(root, 'node_modules/real-pkg'), path.join(root, 'node_modules/linked'));
	const hook = pathToFileURL(path.join(import.meta.dirname, 'module-format-cache.mjs')).href;
	const entry = pathToFileURL(path.join(root, 'node_modules/esm-pkg/index.js')).href;

	function run(withHook: boolean): { passedOn: string[]; installed: boolean; b: string; c: string; e: string } {
		const script = `
			import module from 'node:module';
			const passedOn = [];
			module.registerHooks({ resolve(specifier, context, next) { if (specifier.startsWith('.')) passedOn.push(specifier); return next(specifier, context); } });
			const { installModuleFormatCache } = await import(${JSON.stringify(hook)});
			const installed = ${withHook} ? installModuleFormatCache() : false;
			const { b, c, e } = await import(${JSON.stringify(entry)});
			console.log(JSON.stringify({ passedOn, installed, b, c, e }));
		`;
		const result = spawnSync(NODE22, ['--input-type=module', '-e', script], { encoding: 'utf8' });
		if (result.status !== 0) throw new Error(result.stderr);
		return JSON.parse(result.stdout);
	}

	it('answers a relative import inside a package with a type, as Node would, and passes the others on', () => {
		const without = run(false);
		const withHook = run(true);
		expect(withHook.installed).toBe(true);
		// Node's own answers, with and without the hook: the same files, the link resolved to its real path.
		expect(withHook.b).toBe(without.b);
		expect(withHook.c).toBe('commonjs');
		expect(without.c).toBe('commonjs');
		expect(withHook.e).toBe(pathToFileURL(path.join(root, 'node_modules/real-pkg/e.js')).href);
		expect(withHook.e).toBe(without.e);
		// Without the hook Node resolves all three; with it, only the two it cannot answer exactly reach Node.
		expect(without.passedOn.sort()).toEqual(['../linked/e.js', './b.js', './sub/c.js']);
		expect(withHook.passedOn.sort()).toEqual(['../linked/e.js', './sub/c.js']);
	});
});
