// Copies the built bundle into a Directus extensions folder, the way an admin installs it by hand:
// <extensions>/pseo-automation/{package.json,dist/}.
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { root } from './node-runtime.mjs';

export const BUNDLE_NAME = 'pseo-automation';

/** Installs the build in `dist` (the project's dist/ but in a test) into `extensionsPath`; returns the bundle's folder. */
export function installBundle(extensionsPath, dist = path.join(root, 'dist')) {
	if (!existsSync(path.join(dist, 'api.js'))) {
		throw new Error(`${dist}/api.js is missing: build the extension first (npm run build).`);
	}
	const target = path.join(extensionsPath, BUNDLE_NAME);
	const manifest = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8'));
	const installed = {
		name: manifest.name,
		version: manifest.version,
		type: manifest.type,
		description: manifest.description,
		keywords: manifest.keywords,
		'directus:extension': manifest['directus:extension'],
	};
	const packageJson = `${JSON.stringify(installed, null, '\t')}\n`;
	// Left alone when it holds this very build: several Directus processes may share one extensions folder (the test
	// instances do), and one's start must not pull the bundle from under another that is loading it.
	if (holds(target, packageJson, dist)) return target;
	rmSync(target, { recursive: true, force: true });
	mkdirSync(target, { recursive: true });
	writeFileSync(path.join(target, 'package.json'), packageJson);
	cpSync(dist, path.join(target, 'dist'), { recursive: true });
	return target;
}

/** Whether `target` is already this install: the same package.json, and the same files as `dist` in its dist/. */
function holds(target, packageJson, dist) {
	try {
		if (readFileSync(path.join(target, 'package.json'), 'utf8') !== packageJson) return false;
		const files = readdirSync(dist, { recursive: true, withFileTypes: true }).filter((entry) => entry.isFile());
		const installed = readdirSync(path.join(target, 'dist'), { recursive: true, withFileTypes: true }).filter((entry) => entry.isFile());
		if (installed.length !== files.length) return false;
		return files.every((entry) => {
			const relative = path.relative(dist, path.join(entry.parentPath, entry.name));
			return readFileSync(path.join(entry.parentPath, entry.name)).equals(readFileSync(path.join(target, 'dist', relative)));
		});
	} catch {
		return false;
	}
}
