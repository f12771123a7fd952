// npm run chaos: the bounded chaos run of bench/chaos.ts (three instances on PostgreSQL + Redis, random kills,
// invariants checked at the end; exit 1 on any violation), run with the Node 22 that Directus needs.
//
//   node scripts/chaos.mjs [--seconds 90] [--instances 3] [--kills 3] [--seed N] [--skip-build]
import { spawn } from 'node:child_process';
import path from 'node:path';
import { nodeBinary, nodeEnv, root } from './lib/node-runtime.mjs';

const child = spawn(nodeBinary(), [path.join(root, 'bench', 'chaos.ts'), ...process.argv.slice(2)], {
	cwd: root,
	env: nodeEnv(),
	stdio: 'inherit',
});
for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => child.kill(signal));
child.on('exit', (code, signal) => process.exit(code ?? (signal ? 1 : 0)));
