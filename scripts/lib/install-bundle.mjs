// Copies the built bundle into a Directus extensions folder, the way an admin installs it by hand:
// <extensions>/pseo-automation/{package.json,dist/}.
import { cpSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { root } from './node-runtime.mjs';

export const BUNDLE_NAME = 'pseo-automation';

export function installBundle(extensionsPath) {
	const dist = path.join(root, 'dist');
	if (!existsSync(path.join(dist, 'api.js'))) {
		throw new Error(`${dist}/api.js is missing: build the extension first (npm run build).`);
	}
	const target = path.join(extensionsPath, BUNDLE_NAME);
	rmSync(target, { recursive: true, force: true });
	mkdirSync(target, { recursive: true });
	const manifest = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8'));
	const installed = {
		name: manifest.name,
		version: manifest.version,
		type: manifest.type,
		description: manifest.description,
		keywords: manifest.keywords,
		'directus:extension': manifest['directus:extension'],
	};
	writeFileSync(path.join(target, 'package.json'), `${JSON.stringify(installed, null, '\t')}\n`);
	cpSync(dist, path.join(target, 'dist'), { recursive: true });
	return target;
}
