/** A job as GET /generations/:id gives it (the fields progress needs). */
export interface JobCounts {
	status: string;
	requested_count: number;
	created_count: number;
	failed_count: number;
}

/** How far a job is: created and failed against requested, in percent, and whether it will move again. */
export function progressOf(job: JobCounts): { created: number; failed: number; done: number; finished: boolean } {
	const requested = Math.max(1, job.requested_count);
	const created = Math.min(100, (job.created_count / requested) * 100);
	const failed = Math.min(100 - created, (job.failed_count / requested) * 100);
	const finished = job.status === 'completed' || job.status === 'failed';
	return { created: round(created), failed: round(failed), done: finished ? 100 : round(created + failed), finished };
}

const round = (value: number) => Math.round(value * 10) / 10;
