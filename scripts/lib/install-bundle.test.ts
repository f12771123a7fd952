import { mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { installBundle } from './install-bundle.mjs';

/**
 * Several Directus processes may share one extensions folder (the test instances do): a start that finds the folder
 * already holds the build must leave it as it is, and one that finds another build must replace it whole.
 */
describe('installBundle', () => {
	const root = mkdtempSync(path.join(os.tmpdir(), 'pseo-install-bundle-'));
	afterAll(() => rmSync(root, { recursive: true, force: true }));
	const dist = path.join(root, 'dist');
	const extensions = path.join(root, 'extensions');
	mkdirSync(path.join(dist, 'chunks'), { recursive: true });
	writeFileSync(path.join(dist, 'api.js'), 'export default {};\n');
	writeFileSync(path.join(dist, 'chunks', 'app.js'), 'export default {};\n');
	const installed = (file: string) => path.join(extensions, 'pseo-automation', file);

	it('leaves a folder that holds the same build untouched, and replaces one that holds another', () => {
		installBundle(extensions, dist);
		expect(readFileSync(installed('dist/chunks/app.js'), 'utf8')).toBe('export default {};\n');
		const first = statSync(installed('dist/api.js'), { bigint: true });

		installBundle(extensions, dist);
		const again = statSync(installed('dist/api.js'), { bigint: true });
		expect([again.ino, again.mtimeNs]).toEqual([first.ino, first.mtimeNs]);

		writeFileSync(path.join(dist, 'api.js'), 'export default { changed: true };\n');
		installBundle(extensions, dist);
		expect(readFileSync(installed('dist/api.js'), 'utf8')).toBe('export default { changed: true };\n');

		// A file the build no longer has goes with the old build.
		rmSync(path.join(dist, 'chunks'), { recursive: true });
		installBundle(extensions, dist);
		expect(() => statSync(installed('dist/chunks/app.js'))).toThrow();
		expect(JSON.parse(readFileSync(installed('package.json'), 'utf8'))).toMatchObject({ name: 'pseo-automation' });
	});
});
