import type { FactValue, Facts } from '../../shared/facts.ts';

/** A fact that differs between the facts a post was written from and those its plan page holds now. */
export interface FactChange {
	name: string;
	/** Its value when the post was written; null when the post was written without it. */
	written: FactValue | null;
	/** Its value now; null when the data no longer gives it. */
	now: FactValue | null;
}

/** The facts that changed since a post was written, in the order of its facts, then of the new ones. */
export function factChanges(written: Facts | null | undefined, now: Facts | null | undefined): FactChange[] {
	const before = written ?? {};
	const after = now ?? {};
	const names = [...new Set([...Object.keys(before), ...Object.keys(after)])];
	return names
		.map((name) => ({ name, written: before[name] ?? null, now: after[name] ?? null }))
		.filter((change) => change.written !== change.now);
}
