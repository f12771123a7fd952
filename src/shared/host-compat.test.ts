import { describe, expect, it } from 'vitest';
import snapshot from '../../snapshots/pseo-schema.json' with { type: 'json' };
import { hostMajor, snapshotForHost } from './host-compat.ts';

describe('hostMajor', () => {
	it.each([
		['11.16.1', 11],
		['12.3.1', 12],
		['12.0.0-rc.1', 12],
	])('reads the major of %j as %i', (version, major) => {
		expect(hostMajor(version)).toBe(major);
	});

	it('refuses a value that is no version, naming it', () => {
		expect(() => hostMajor('latest')).toThrow(new TypeError('Expected a Directus version such as "12.3.1", got "latest"'));
	});
});

describe('snapshotForHost', () => {
	it('hands the partial (version 2) snapshot to Directus 12 unchanged', () => {
		expect(snapshot.version).toBe(2);
		expect(snapshotForHost(snapshot, '12.3.1')).toBe(snapshot);
	});

	it('presents the same entries as a version 1 snapshot to Directus 11, without touching the original', () => {
		const forEleven = snapshotForHost(snapshot, '11.16.1');
		expect(forEleven.version).toBe(1);
		expect(forEleven.collections).toBe(snapshot.collections);
		expect(forEleven.fields).toBe(snapshot.fields);
		expect(forEleven.relations).toBe(snapshot.relations);
		expect(snapshot.version).toBe(2);
	});
});
