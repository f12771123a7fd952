import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { descendants } from './process-tree.ts';

/** Whether the module at `moduleUrl` is the script node was started with. */
export function isMain(moduleUrl: string): boolean {
	return !!process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(moduleUrl);
}

/**
 * Runs a bench as a script: prints its figures as the one `BENCH_RESULT` line and exits 0, or exits 1 on a failure
 * and after `limitMinutes` (a stuck run must not hold the machine), 130 on SIGINT or SIGTERM. Whatever way it ends,
 * `cleanup` stops what the run started, and anything still alive under this process is killed.
 */
export async function runBenchMain(tag: string, run: () => Promise<unknown>, cleanup: () => Promise<void>, limitMinutes: number): Promise<never> {
	const abort = (code: number, message: string) => {
		process.stderr.write(`[${tag}] ${message}\n`);
		// Cleanup stops Directus and the fake; never wait for it for long.
		setTimeout(() => process.exit(code), 15_000).unref();
		void cleanup().then(() => {
			// Whatever is left (a template bootstrap cut short) was started by this run.
			for (const pid of descendants(process.pid).reverse()) {
				try {
					process.kill(pid, 'SIGKILL');
				} catch {
					// already gone
				}
			}
			process.exit(code);
		});
	};
	setTimeout(() => abort(1, `gave up after ${limitMinutes} minutes`), limitMinutes * 60_000).unref();
	for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => abort(130, `stopped by ${signal}`));
	try {
		const figures = await run();
		process.stdout.write(`BENCH_RESULT ${JSON.stringify(figures)}\n`);
		process.exit(0);
	} catch (error) {
		process.stderr.write(`[${tag}] benchmark failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
		process.exit(1);
	}
}
