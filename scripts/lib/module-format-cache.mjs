// Node 22's ES module loader finds the format of each `.js` file it imports from the nearest package.json, and on
// every such lookup it parses that package.json's whole `exports` field again: deserializePackageJSON spreads an
// object whose lazy `exports` getter runs JSON.parse, so the laziness is lost. Directus imports date-fns, whose
// package.json has a 138 kB `exports` map, and about 2,500 files of it: a Directus start spent 1.2 of its 6.5 s of
// CPU in those parses and more in collecting their garbage (a --cpu-prof of `npm start`, package_json_reader.js).
//
// The hook below answers the common case itself: a relative `./x.js` import of an ES module inside an installed
// package whose nearest package.json says its `type`. It gives the same answer Node would (the file, and the
// format that `type` names), reading each package.json once; every other import goes to Node's own resolution.
import { lstatSync, readFileSync, realpathSync } from 'node:fs';
import module from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** By directory: the `type` of the nearest package.json, or null where it names none (Node then looks at the syntax). */
const typeOfDirectory = new Map();

function packageType(directory) {
	const known = typeOfDirectory.get(directory);
	if (known !== undefined) return known;
	let type = null;
	let found = false;
	try {
		const json = JSON.parse(readFileSync(path.join(directory, 'package.json'), 'utf8'));
		found = true;
		if (json.type === 'module' || json.type === 'commonjs') type = json.type;
	} catch (error) {
		// No package.json here: the parent's answers. A package.json that does not parse is Node's to report.
		if (error?.code !== 'ENOENT') found = true;
	}
	if (!found) {
		const parent = path.dirname(directory);
		type = parent === directory ? null : packageType(parent);
	}
	typeOfDirectory.set(directory, type);
	return type;
}

/** By directory: whether it is its own real path (no symbolic link on the way to it). */
const realDirectory = new Map();

function isRealDirectory(directory) {
	let real = realDirectory.get(directory);
	if (real === undefined) {
		try {
			real = realpathSync(directory) === directory;
		} catch {
			real = false;
		}
		realDirectory.set(directory, real);
	}
	return real;
}

/** A file reached by no symbolic link: Node would resolve a link to its real path, so links are Node's to follow. */
function isPlainFile(file) {
	try {
		return lstatSync(file).isFile() && isRealDirectory(path.dirname(file));
	} catch {
		return false;
	}
}

/** Installs the hook where this Node has synchronous module hooks (22.15 and later); returns whether it did. */
export function installModuleFormatCache() {
	if (typeof module.registerHooks !== 'function') return false;
	module.registerHooks({
		resolve(specifier, context, nextResolve) {
			const parent = context.parentURL;
			if (
				parent?.startsWith('file:') &&
				parent.includes('/node_modules/') &&
				(specifier.startsWith('./') || specifier.startsWith('../')) &&
				specifier.endsWith('.js') &&
				context.conditions?.includes('import')
			) {
				const url = new URL(specifier, parent);
				const file = fileURLToPath(url);
				const type = packageType(path.dirname(file));
				if (type && isPlainFile(file)) return { url: url.href, format: type, shortCircuit: true };
			}
			return nextResolve(specifier, context);
		},
	});
	return true;
}
