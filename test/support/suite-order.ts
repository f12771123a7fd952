/**
 * Starts the slowest test files first. With two workers, a long suite that starts last keeps one worker busy
 * alone at the end of the run; started first, it overlaps with the many short ones. Vitest's own sequencer does
 * this too, but only from its cache in node_modules, which a clean clone (CI) does not have: there it starts the
 * largest files first, which are not the slowest. Files of unknown duration go first, as vitest's do.
 */
import { BaseSequencer, type TestSpecification } from 'vitest/node';
import { knownDurations, suiteKey } from './suite-durations.ts';

export default class SlowestFirst extends BaseSequencer {
	override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
		const durations = knownDurations();
		const byGroup = await super.sort(files);
		const duration = (file: TestSpecification) => durations[suiteKey(file.project.name, file.moduleId)] ?? Number.POSITIVE_INFINITY;
		// super.sort keeps the projects' group order (unit tests before any Directus boots); within a group, slowest first.
		return [...byGroup].sort((a, b) => {
			const group = a.project.config.sequence.groupOrder - b.project.config.sequence.groupOrder;
			if (group !== 0) return group;
			const [da, db] = [duration(a), duration(b)];
			return da === db ? 0 : db > da ? 1 : -1;
		});
	}
}
