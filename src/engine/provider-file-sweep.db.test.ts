import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeOnVendors, insertPendingJob, insertUser, insertWebsite, silentLogger } from '../../test/support/db-under-test.ts';
import { startFakeProvider, type FakeProvider } from '../../test/support/fake-provider/server.ts';
import { createOpenAiProvider } from '../provider/openai/openai-provider.ts';
import { JOBS } from './job-store.ts';
import { sweepProviderFiles } from './provider-file-sweep.ts';

/*
 * Our uploads left at the provider (a cancel while a batch ran, a crash between an upload and its part): the sweep
 * deletes those of ended jobs a day after their upload, over HTTP against the fake, and nothing else.
 */
describeOnVendors('provider file sweep', (database) => {
	let fake: FakeProvider;
	beforeAll(async () => {
		fake = await startFakeProvider();
	});
	afterAll(async () => fake?.close());

	it('deletes the uploads of ended jobs once a day old, and keeps those of unfinished jobs, fresh ones and files not ours', async () => {
		const knex = database().knex;
		const provider = createOpenAiProvider({ apiKey: 'test-key', baseURL: `${fake.url}`, model: 'test-model', timeoutMs: 5000, backoff: { baseMs: 10, maxMs: 10 }, logger: silentLogger });
		const userId = await insertUser(knex, 1000);
		const pseoId = await insertWebsite(knex, userId);
		const ended = await insertPendingJob(knex, { userId, pseoId, routes: ['/a'] });
		await knex(JOBS).where('id', ended).update({ status: 'failed', active_pseo_id: null });
		const running = await insertPendingJob(knex, { userId, pseoId: await insertWebsite(knex, userId), routes: ['/b'] });
		await knex(JOBS).where('id', running).update({ status: 'running' });
		const line = JSON.stringify({ custom_id: '/a', method: 'POST', url: '/v1/chat/completions', body: {} });
		const orphan = await provider.uploadBatchFile([line], `pseo-generation-${ended}-part-0.jsonl`);
		const inUse = await provider.uploadBatchFile([line], `pseo-generation-${running}-part-0.jsonl`);
		const foreign = await provider.uploadBatchFile([line], 'someone-elses-batch.jsonl');
		const listed = async () => {
			const ids: string[] = [];
			for await (const file of provider.listBatchFiles()) ids.push(file.id);
			return ids.sort();
		};
		expect(await listed()).toEqual([orphan, inUse, foreign].sort());

		// Fresh uploads are left alone: a step may be about to create their batch.
		expect(await sweepProviderFiles(knex, provider, silentLogger)).toBe(0);
		expect(await listed()).toEqual([orphan, inUse, foreign].sort());
		// A day and a minute later, only the upload of the ended job goes.
		expect(await sweepProviderFiles(knex, provider, silentLogger, Date.now() + 24 * 60 * 60 * 1000 + 60_000)).toBe(1);
		expect(await listed()).toEqual([inUse, foreign].sort());
		expect(fake.requests.filter((entry) => entry.method === 'DELETE').map((entry) => entry.path)).toEqual([`/v1/files/${orphan}`]);
	});
});
