/**
 * Starts the slowest test files first. With two workers, a long suite that starts last keeps one worker busy
 * alone at the end of the run; started first, it overlaps with the many short ones. Vitest's own sequencer does
 * this too, but only from its cache in node_modules, which a clean clone (CI) does not have: there it starts the
 * largest files first, which are not the slowest. Files of unknown duration go first, as vitest's do.
 *
 * Then the files that share a Directus (instance-broker.ts) are drawn together: right after a file that asks for an
 * instance of some environment come the other files that ask for the same, so the instance they share is running or
 * parked when they ask (the broker keeps a bounded number parked), not stopped and booted again.
 */
import { readFileSync } from 'node:fs';
import { BaseSequencer, type TestSpecification } from 'vitest/node';
import { knownDurations, suiteKey } from './suite-durations.ts';

export default class SlowestFirst extends BaseSequencer {
	override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
		const durations = knownDurations();
		const byGroup = await super.sort(files);
		const duration = (file: TestSpecification) => durations[suiteKey(file.project.name, file.moduleId)] ?? Number.POSITIVE_INFINITY;
		// super.sort keeps the projects' group order (unit tests before any Directus boots); within a group, slowest first.
		const slowestFirst = [...byGroup].sort((a, b) => {
			const group = a.project.config.sequence.groupOrder - b.project.config.sequence.groupOrder;
			if (group !== 0) return group;
			const [da, db] = [duration(a), duration(b)];
			return da === db ? 0 : db > da ? 1 : -1;
		});
		return drawSharersTogether(slowestFirst);
	}
}

/** The order given, except that each file that shares an instance is followed by the later files sharing it too. */
function drawSharersTogether(files: TestSpecification[]): TestSpecification[] {
	const shared = new Map(files.map((file) => [file, sharedEnvironments(file.moduleId)]));
	const remaining = [...files];
	const ordered: TestSpecification[] = [];
	while (remaining.length > 0) {
		const next = remaining.shift()!;
		ordered.push(next);
		const mine = shared.get(next)!;
		if (mine.size === 0) continue;
		for (let i = 0; i < remaining.length; ) {
			const other = remaining[i]!;
			if (other.project.name === next.project.name && [...shared.get(other)!].some((environment) => mine.has(environment))) {
				ordered.push(other);
				remaining.splice(i, 1);
			} else i += 1;
		}
	}
	return ordered;
}

/**
 * The environments a test file asks the broker for, as written in its source (`useSharedDirectus(leg, ENGINE_ENV)`):
 * an ordering hint read without running the file, so a clean clone gets it too. A call without an environment
 * asks for the plain instance.
 */
function sharedEnvironments(file: string): Set<string> {
	let source = '';
	try {
		source = readFileSync(file, 'utf8');
	} catch {
		return new Set();
	}
	const environments = new Set<string>();
	for (const match of source.matchAll(/(?:shareDirectus|shareDirectusWithFake|useSharedDirectus)\(\s*[\w.]+\s*(?:,\s*([^)]*?))?\s*\)/g)) {
		environments.add(match[1]?.trim() || 'plain');
	}
	return environments;
}
