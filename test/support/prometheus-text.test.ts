import { Counter, Histogram, Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { parsePrometheusText } from './prometheus-text.ts';

describe('parsePrometheusText', () => {
	it('reads what prom-client writes: counters with labels, histograms with their buckets, sum and count', async () => {
		const registry = new Registry();
		const calls = new Counter({ name: 'demo_calls_total', help: 'Calls, "quoted" \\ and all.', labelNames: ['kind'], registers: [registry] });
		const latency = new Histogram({ name: 'demo_seconds', help: 'Latency.', buckets: [0.1, 1], registers: [registry] });
		calls.inc({ kind: 'a "b"\\c' }, 3);
		latency.observe(0.5);
		const parsed = parsePrometheusText(await registry.metrics());
		expect(parsed.types.get('demo_calls_total')).toBe('counter');
		expect(parsed.value('demo_calls_total', { kind: 'a "b"\\c' })).toBe(3);
		expect(parsed.value('demo_seconds_bucket', { le: '0.1' })).toBe(0);
		expect(parsed.value('demo_seconds_bucket', { le: '1' })).toBe(1);
		expect(parsed.value('demo_seconds_bucket', { le: '+Inf' })).toBe(1);
		expect(parsed.value('demo_seconds_count')).toBe(1);
		expect(parsed.value('demo_seconds_sum')).toBe(0.5);
	});

	it.each([
		['a sample of no declared family', 'x_total 1\n'],
		['a bad value', '# TYPE x counter\nx one\n'],
		['a bad label set', '# TYPE x counter\nx{kind=a} 1\n'],
		['an unknown type', '# TYPE x meter\nx 1\n'],
		['a bad name', '# TYPE 9x counter\n'],
		['no final line feed', '# TYPE x counter\nx 1'],
	])('refuses %s', (_what, text) => {
		expect(() => parsePrometheusText(text)).toThrow(SyntaxError);
	});
});
