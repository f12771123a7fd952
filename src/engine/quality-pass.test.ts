import PQueue from 'p-queue';
import { describe, expect, it } from 'vitest';
import type { PageContent } from '../posts/post-store.ts';
import type { QualityGate } from '../quality/quality-gate.ts';
import { rewriteFailed, type FirstVerdict } from './quality-pass.ts';

const page = (body: string): PageContent => ({ title: 'Plumbers in Lyon', meta_title: null, meta_description: null, h1: null, body, faq: [], internal_links: [] });

const first: FirstVerdict = {
	content: page('A first version that failed the gate.'),
	failed: true,
	issues: [{ check: 'words', severity: 'fail', detail: 'too short' }],
	place: { route: '/lyon', primaryKeyword: null, planRoutes: new Set(['/lyon']) },
};

/** No second version reaches the gate in these cases: a call would be a fault of the test. */
const gate: QualityGate = {
	assess: async () => {
		throw new Error('the gate was asked about a rewrite that never came');
	},
	settle: () => {},
};

function recordingLogger() {
	const warnings: string[] = [];
	const logger = { debug: () => {}, info: () => {}, warn: (_: unknown, message: string) => void warnings.push(message), error: () => {} };
	return { logger, warnings };
}

describe('rewriteFailed', () => {
	it('keeps the first version when the rewrite fails at the provider', async () => {
		const { logger, warnings } = recordingLogger();
		const rewrite = async () => {
			throw new Error('503 from the provider');
		};
		const kept = await rewriteFailed(first, rewrite, { gate, logger, jobId: 1, signal: new AbortController().signal });
		expect(kept).toBe(first.content);
		expect(warnings).toEqual(['pseo quality rewrite failed; the first version is kept']);
	});

	it('gives up the page, without keeping the first version, when a stopping instance drops the queued rewrite', async () => {
		const { logger, warnings } = recordingLogger();
		const queue = new PQueue({ concurrency: 1 });
		const controller = new AbortController();
		// The only slot is busy, so the rewrite waits in the queue, as a bulk ingest's rewrites do behind its pages.
		let unblock!: () => void;
		void queue.add(() => new Promise<void>((resolve) => (unblock = resolve)));
		const rewrite = () => queue.add(async () => page('A second version.'), { signal: controller.signal });
		const result = rewriteFailed(first, rewrite, { gate, logger, jobId: 1, signal: controller.signal });
		// Drain clears the queue first and aborts the jobs only after a grace period.
		queue.clear();
		await expect(result).rejects.toMatchObject({ name: 'AbortError' });
		expect(controller.signal.aborted).toBe(false);
		expect(warnings).toEqual([]);
		unblock();
	});
});
