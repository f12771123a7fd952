/*
 * Crash windows for the durability tests. The durability promise (operating contract section 5) is about what
 * happens when the process dies between two writes that cannot share a transaction, such as the provider's batch
 * create and storing its id. A kill from outside lands in such a window only by luck; these named points let a
 * test kill the process exactly there, and then prove that every accepted job still finishes once and every token
 * is accounted for.
 *
 * A point does nothing unless the process was started with PSEO_TEST_FAULT naming it, and never when NODE_ENV is
 * `production` (the Directus image sets it), so a stray variable cannot crash a production instance. The variable
 * is read once, at start-up.
 */

/** The crash windows a test can arm. */
export type FaultPoint =
	/** The provider created the batch; its id is not stored yet (the adopt-by-metadata path). */
	| 'after-batch-create'
	/** The first chunk of a batch's results is stored; the rest is not. */
	| 'mid-batch-ingest'
	/** The trigger's job and charge are committed; the 202 has not been sent. */
	| 'after-trigger-commit';

const ENV_VAR = 'PSEO_TEST_FAULT';

const armed: string | null = process.env['NODE_ENV'] === 'production' ? null : (process.env[ENV_VAR] ?? null);

/** Kills this process outright (as kill -9 would) when the test armed `point`. */
export function faultPoint(point: FaultPoint): void {
	if (armed !== point) return;
	process.stderr.write(`pseo-automation: ${ENV_VAR}=${point} reached; killing the process\n`);
	process.kill(process.pid, 'SIGKILL');
}
