/**
 * Checks shared by the suites that run jobs across instances, crashes and stalls. Every count comes from the
 * shared database (read through an instance as admin) or from the fake provider's own request log, never from an
 * instance's memory.
 */
import { expect } from 'vitest';
import { adminItems, balanceOf, createWebsite, eventually, ledgerOf, planPages, seedPlan, type TestUser } from './api.ts';
import type { DirectusInstance } from './directus.ts';
import type { FakeProvider } from './fake-provider/server.ts';

let serial = 0;

/**
 * A website with a plan whose routes are unique in the whole run, so the fake's per-route counts are exact; `website`
 * adds fields to its POST /pseo body (its provider and model, say).
 */
export async function plannedSite(
	directus: DirectusInstance,
	user: TestUser,
	pages: number,
	website: Record<string, unknown> = {},
): Promise<{ pseoId: number; routes: string[] }> {
	const { id } = await createWebsite(directus, user, website);
	const plan = planPages(pages, `/s${process.pid}-${++serial}-page`);
	await seedPlan(directus, user, id, plan);
	return { pseoId: id, routes: plan.map((page) => page.route) };
}

/** The raw job row, lease and batch columns included. */
export async function jobRow(directus: DirectusInstance, id: number): Promise<Record<string, any>> {
	const [row] = await adminItems(directus, 'pseo_generations', `filter[id][_eq]=${id}`);
	return row;
}

/** The routes of a website's posts, sorted. */
export async function postedRoutes(directus: DirectusInstance, pseoId: number): Promise<string[]> {
	const posts = await adminItems(directus, 'pseo_posts', `filter[pseo_id][_eq]=${pseoId}&fields=route`);
	return posts.map((post) => post.route as string).sort();
}

/** One post per route of the website, and its counter agrees. */
export async function expectPostsOnce(directus: DirectusInstance, pseoId: number, routes: string[]): Promise<void> {
	expect(await postedRoutes(directus, pseoId)).toEqual([...routes].sort());
	const [website] = await adminItems(directus, 'pseo', `filter[id][_eq]=${pseoId}`);
	expect(website.post_counts_total).toBe(routes.length);
}

/** Batches created for one generation, from the fake's log (the batch metadata names the job). */
export function batchesOf(fake: FakeProvider, generationId: number): number {
	return fake.requests.filter(
		(entry) => entry.method === 'POST' && entry.path === '/v1/batches' && entry.status === 200 && entry.metadata?.['pseo_generation_id'] === String(generationId),
	).length;
}

/** Waits until `instance` has given job `jobId` up: it found its lease gone, or a late write of its was refused. */
export async function waitForGiveUp(instance: DirectusInstance, jobId: number, timeoutMs = 20_000): Promise<void> {
	const gaveUp = (line: string) => line.includes(`"jobId":${jobId}`) && /lease lost|handed over/.test(line);
	await eventually(async () => instance.output().split('\n').some(gaveUp), timeoutMs, `the worker to give job ${jobId} up`);
}

/** The ledger of a user agrees with the balance: grants - charges + refunds. */
export async function expectLedgerBalances(directus: DirectusInstance, user: TestUser): Promise<Record<string, any>[]> {
	const ledger = await ledgerOf(directus, user.id);
	const sum = ledger.reduce((total, row) => total + Number(row.amount), 0);
	expect(await balanceOf(directus, user.id)).toBe(sum);
	return ledger;
}
