/*
 * A reader of the Prometheus text exposition format 0.0.4 (https://prometheus.io/docs/instrumenting/exposition_formats/),
 * strict enough to refuse what Prometheus would: every line is a comment, a HELP or TYPE line, or a sample, every
 * name and label follows the grammar, every sample belongs to a declared family, and every value is a float.
 */

const METRIC_NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const LABEL_NAME = /^[a-zA-Z_][a-zA-Z0-9_]*$/;
const TYPES = new Set(['counter', 'gauge', 'histogram', 'summary', 'untyped']);
/** Suffixes a histogram's or a summary's samples carry after the family's name. */
const SUFFIXES: Record<string, string[]> = { histogram: ['_bucket', '_sum', '_count'], summary: ['', '_sum', '_count'] };

interface Sample {
	name: string;
	labels: Record<string, string>;
	value: number;
}

export interface Exposition {
	types: Map<string, string>;
	samples: Sample[];
	/** The value of the sample with exactly these labels, or 0 when there is none (a counter not yet incremented). */
	value(name: string, labels?: Record<string, string>): number;
}

export function parsePrometheusText(text: string): Exposition {
	const types = new Map<string, string>();
	const helps = new Set<string>();
	const samples: Sample[] = [];
	if (!text.endsWith('\n')) throw new SyntaxError('the exposition must end with a line feed');
	text.slice(0, -1).split('\n').forEach((line, index) => {
		const where = `line ${index + 1}: ${JSON.stringify(line)}`;
		if (line === '') return;
		if (line.startsWith('#')) {
			const meta = /^# (HELP|TYPE) (\S+) ?(.*)$/.exec(line);
			if (!meta) return; // a plain comment
			const [, kind, name, rest] = meta as unknown as [string, string, string, string];
			if (!METRIC_NAME.test(name)) throw new SyntaxError(`${where}: bad metric name`);
			if (kind === 'TYPE') {
				if (!TYPES.has(rest)) throw new SyntaxError(`${where}: unknown type`);
				if (types.has(name)) throw new SyntaxError(`${where}: a second TYPE for ${name}`);
				types.set(name, rest);
			} else {
				if (helps.has(name)) throw new SyntaxError(`${where}: a second HELP for ${name}`);
				helps.add(name);
			}
			return;
		}
		const sample = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)( -?\d+)?$/.exec(line);
		if (!sample) throw new SyntaxError(`${where}: not a sample`);
		const [, name, , labelText, rawValue] = sample as unknown as [string, string, string | undefined, string | undefined, string];
		const value = rawValue === '+Inf' ? Infinity : rawValue === '-Inf' ? -Infinity : rawValue === 'NaN' ? NaN : Number(rawValue);
		if (!/^(?:[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?|[+-]Inf|NaN)$/.test(rawValue)) throw new SyntaxError(`${where}: bad value`);
		const family = familyOf(name, types);
		if (!family) throw new SyntaxError(`${where}: sample of an undeclared family`);
		samples.push({ name, labels: labelText === undefined ? {} : parseLabels(labelText, where), value });
	});
	return {
		types,
		samples,
		value(name, labels = {}) {
			const wanted = JSON.stringify(Object.entries(labels).sort());
			return samples.find((sample) => sample.name === name && JSON.stringify(Object.entries(sample.labels).sort()) === wanted)?.value ?? 0;
		},
	};
}

function familyOf(name: string, types: Map<string, string>): string | null {
	if (types.has(name)) return name;
	for (const [family, type] of types) {
		for (const suffix of SUFFIXES[type] ?? []) if (suffix && name === `${family}${suffix}`) return family;
	}
	return null;
}

function parseLabels(text: string, where: string): Record<string, string> {
	const labels: Record<string, string> = {};
	const pattern = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\\n]|\\[\\"n])*)"(,|$)/y;
	let at = 0;
	while (at < text.length) {
		pattern.lastIndex = at;
		const match = pattern.exec(text);
		if (!match) throw new SyntaxError(`${where}: bad label set`);
		const [, name, raw] = match as unknown as [string, string, string];
		if (!LABEL_NAME.test(name) || name in labels) throw new SyntaxError(`${where}: bad or repeated label ${name}`);
		labels[name] = raw.replace(/\\(["\\n])/g, (_, c: string) => (c === 'n' ? '\n' : c));
		at = pattern.lastIndex;
	}
	return labels;
}
