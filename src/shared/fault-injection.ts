import { readFileSync } from 'node:fs';

/*
 * Crash windows for the durability tests. The durability promise (operating contract section 5) is about what
 * happens when the process dies between two writes that cannot share a transaction, such as the provider's batch
 * create and storing its id. A kill from outside lands in such a window only by luck; these named points let a
 * test kill the process exactly there, and then prove that every accepted job still finishes once and every token
 * is accounted for.
 *
 * A point does nothing unless the process was started with PSEO_TEST_FAULT_FILE, the path of a file in which the
 * test writes the name of the point to arm (and empties it to disarm), so that running instances are armed
 * without a restart. The variable is read once, at start-up, and ignored whenever NODE_ENV is `production` (the
 * Directus image sets it), so a stray variable cannot crash a production instance; without it, a point costs one
 * comparison.
 */

/** The crash windows a test can arm. */
export type FaultPoint =
	/** The provider created the batch; its id is not stored yet (the adopt-by-metadata path). */
	| 'after-batch-create'
	/** A part of a bulk job is stored; the job's next part is not submitted yet. */
	| 'between-parts'
	/** The first chunk of a batch's results is stored; the rest is not. */
	| 'mid-batch-ingest'
	/** The trigger's job and charge are committed; the 202 has not been sent. */
	| 'after-trigger-commit'
	/** A cancel is stored and the job's lease taken; no page is cancelled yet. */
	| 'after-cancel-mark'
	/** WordPress created a post; its id is not stored yet (the adopt-by-marker path of publishing). */
	| 'after-remote-create'
	/** A sync import has written a batch of plan pages inside its transaction; the rest, the charge and the commit are not done. */
	| 'mid-plan-sync';

const FILE_VAR = 'PSEO_TEST_FAULT_FILE';

const faultFile: string | null = process.env['NODE_ENV'] === 'production' ? null : process.env[FILE_VAR] || null;

function armedPoint(file: string): string {
	try {
		return readFileSync(file, 'utf8').trim();
	} catch {
		return '';
	}
}

/** Kills this process outright (as kill -9 would) when the test armed `point`. */
export function faultPoint(point: FaultPoint): void {
	if (faultFile === null || armedPoint(faultFile) !== point) return;
	process.stderr.write(`pseo-automation: fault point ${point} reached; killing the process\n`);
	process.kill(process.pid, 'SIGKILL');
}
