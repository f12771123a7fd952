// @vitejs/plugin-vue is the one @directus/extensions-sdk builds the app module with. It is not a direct dependency:
// its peer range stops at vite 7 while the SDK ships vite 8, and npm refuses that pairing at the top level.
import vue from '@vitejs/plugin-vue';
import { availableParallelism } from 'node:os';
import { defineConfig } from 'vitest/config';
import SlowestFirst from './test/support/suite-order.ts';

export default defineConfig({
	test: {
		// The slowest test files start first, from the durations of earlier runs (test/support/suite-order.ts).
		sequence: { sequencer: SlowestFirst },
		projects: [
			{
				// Single-file components of the app module (src/pseo-module) are compiled for their component tests.
				plugins: [vue()],
				test: {
					name: 'unit',
					include: ['src/**/*.test.ts', 'scripts/**/*.test.ts', 'test/support/fake-provider/**/*.test.ts', 'test/support/response-contract.test.ts', 'test/docker-compose.test.ts', 'test/layout.test.ts', 'test/markdown-links.test.ts'],
					// *.db.test.ts drive the data modules on real databases: they need the integration setup's templates.
					exclude: ['src/**/*.db.test.ts'],
					// Unit tests run first, and fast, before any Directus boots.
					sequence: { groupOrder: 0 },
					// Without a fresh module graph per file: the unit files keep no state between them (each fake timer is
					// put back by its test), and loading the graph again for each of 73 files took half of their 50 s.
					isolate: false,
					// Vitest's default leaves a core of two idle (one worker less than the cores): the unit files run after
					// the global set-up and before any suite's Directus starts, with the whole machine to themselves.
					maxWorkers: 2,
					testTimeout: 20_000,
				},
			},
			{
				test: {
					name: 'integration',
					include: ['test/**/*.test.ts', 'src/**/*.db.test.ts'],
					exclude: ['test/support/fake-provider/**', 'test/support/response-contract.test.ts', 'test/docker-compose.test.ts', 'test/layout.test.ts', 'test/markdown-links.test.ts'],
					sequence: { groupOrder: 1 },
					globalSetup: ['test/support/global-setup.ts'],
					testTimeout: 120_000,
					hookTimeout: 300_000,
					// Two files more than the cores: a suite waits for much of its time (a lease to lapse, a sweep, a held call,
					// the browser), and the other files fill those waits. On a two-core machine, from 2 to 3 took the integration
					// files from 748 s to 573 s; since the suites share their instances, from 3 to 4 took a warm run from 477 s to
					// 449 s, both cores busy 93 % of the run instead of 84 % (docs/testing.md). PSEO_TEST_WORKERS overrides it.
					maxWorkers: integrationWorkers(),
					pool: 'forks',
					// Each worker runs file after file without loading the module graph again: the files keep their state in
					// their own hooks and instances (the fakes, users and websites each makes), not in modules. On a run bound
					// by CPU, a dozen of them took 106 s instead of 127 s with a fresh graph each (their imports 5 s, not 11).
					isolate: false,
				},
			},
		],
	},
});

/** The integration project's worker count: PSEO_TEST_WORKERS, or two more than the machine's cores. */
function integrationWorkers(): number {
	const asked = process.env['PSEO_TEST_WORKERS'];
	if (asked === undefined || asked === '') return availableParallelism() + 2;
	const workers = Number(asked);
	if (!Number.isInteger(workers) || workers < 1) throw new Error(`PSEO_TEST_WORKERS must be a whole number of workers, 1 or more; got "${asked}"`);
	return workers;
}
