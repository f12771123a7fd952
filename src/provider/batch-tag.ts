/*
 * The engine tags each provider batch with metadata (batch-submit.ts): its job, its part, the part's route range and
 * the part it resubmits. A provider that keeps no metadata carries the same facts in a compact tag instead:
 * Anthropic at the head of every custom id, Google in the batch's display name.
 */

/** Metadata keys the engine tags a batch with (batch-submit.ts, part-store.ts), all carried by the tag but `pseo_id`. */
const JOB_KEY = 'pseo_generation_id';
const PART_KEY = 'pseo_generation_part';
const NEW_PART = 'none';
/** `g<job>_p<part>_s<route start>_e<route end>_r<resubmitted part, or n>__`, then whatever follows the tag. */
const TAGGED = /^g(\d{1,15})_p(\d{1,9})_s(\d{1,12})_e(\d{1,12})_r(\d{1,9}|n)__(.+)$/;

/**
 * The tag of a batch, from the engine's metadata: compact and reversible, within the 64 characters of an Anthropic
 * custom id with room for the engine's own id. `pseo_id` is left out: nothing reads it back.
 */
export function encodeTag(metadata: Record<string, string>): string {
	const job = metadata[JOB_KEY] ?? '';
	const [partJob, part] = (metadata[PART_KEY] ?? '').split(':');
	const start = metadata['route_start'] ?? '';
	const end = metadata['route_end'] ?? '';
	const resubmit = metadata['resubmit_of'] ?? '';
	const digits = /^\d+$/;
	const valid = digits.test(job) && partJob === job && digits.test(part ?? '') && digits.test(start) && digits.test(end) && (resubmit === NEW_PART || digits.test(resubmit));
	const tag = `g${job}_p${part}_s${start}_e${end}_r${resubmit === NEW_PART ? 'n' : resubmit}__`;
	if (!valid || !TAGGED.test(`${tag}x`)) throw new TypeError(`Expected batch metadata of a job's part, got \`${JSON.stringify(metadata).slice(0, 200)}\``);
	return tag;
}

/** The metadata of a tagged text, and what follows the tag (the engine's custom id); null when it carries no tag. */
export function decodeTag(customId: string): { metadata: Record<string, string>; customId: string } | null {
	const match = TAGGED.exec(customId);
	if (!match) return null;
	const [, job, part, start, end, resubmit, rest] = match as unknown as [string, string, string, string, string, string, string];
	return {
		metadata: { [JOB_KEY]: job, [PART_KEY]: `${job}:${part}`, route_start: start, route_end: end, resubmit_of: resubmit === 'n' ? NEW_PART : resubmit },
		customId: rest,
	};
}
