import { describe, expect, it } from 'vitest';
import { decodeTag, encodeTag } from './batch-tag.ts';
import { partMetadata as metadata } from '../../test/support/batch-provider-kit.ts';

describe('batch tags', () => {
	it("carry a part's metadata in a tag that decodes back, within an Anthropic custom id's 64 characters", () => {
		const tags = { ...metadata(123456789012, 999, '998'), route_start: '9999999', route_end: '10000000' };
		const tag = encodeTag(tags);
		const customId = `${tag}p9999999`;
		expect(customId.length).toBeLessThanOrEqual(64);
		expect(customId).toMatch(/^[a-zA-Z0-9_-]{1,64}$/);
		const { pseo_id: _dropped, ...kept } = tags;
		expect(decodeTag(customId)).toEqual({ metadata: kept, customId: 'p9999999' });
		expect(decodeTag(`${encodeTag(metadata(5, 0))}p0`)?.metadata['resubmit_of']).toBe('none');
		expect(decodeTag('p12')).toBeNull();
		expect(() => encodeTag({ ...tags, pseo_generation_part: '1:2' })).toThrow(TypeError);
	});

	it('read back only a whole tag', () => {
		expect(decodeTag('g12_p0_s0_e2_rn__part')?.customId).toBe('part');
		expect(decodeTag('g12_p0_s0_e2_rn__')).toBeNull();
		expect(decodeTag('x12_p0_s0_e2_rn__part')).toBeNull();
	});
});
