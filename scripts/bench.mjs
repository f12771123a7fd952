// npm run bench: builds the extension once, runs every bench/*.bench.ts one after the other with Node 22, and
// ends with one table of every figure, its target and PASS, FAIL or info. Exits 1 when a target fails or a
// bench breaks. The same table, the machine it ran on, each bench's own account of the run and what each figure
// measures (bench/<name>.md) go to bench/RESULTS.md, which is only ever written here.
//
//   node scripts/bench.mjs [name-filter ...]
//
// A bench prints whatever it likes plus one line `BENCH_RESULT [{ name, value, unit?, target, pass }]`, where
// `pass` is true or false against the target, or null for an informational figure that has no target to meet.
// A bench file that never prints that line but exports a `run...Bench({ log })` function returning those figures
// is run through that function instead.
// PSEO_BENCH_TIMEOUT_MS bounds each bench (default 25 minutes).
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { nodeBinary, nodeEnv, root } from './lib/node-runtime.mjs';

const PREFIX = 'BENCH_RESULT ';
const timeoutMs = Number(process.env.PSEO_BENCH_TIMEOUT_MS ?? 25 * 60_000);
if (!Number.isFinite(timeoutMs) || timeoutMs <= 0) {
	throw new TypeError(`PSEO_BENCH_TIMEOUT_MS must be a positive number of ms, received ${JSON.stringify(process.env.PSEO_BENCH_TIMEOUT_MS)}`);
}
const node = nodeBinary();
const filters = process.argv.slice(2);

const benchDir = path.join(root, 'bench');
const files = readdirSync(benchDir)
	.filter((name) => name.endsWith('.bench.ts'))
	.filter((name) => filters.length === 0 || filters.some((filter) => name.includes(filter)))
	.sort();
if (files.length === 0) {
	console.error(`no bench/*.bench.ts matches ${filters.length ? filters.join(', ') : 'anything'}`);
	process.exit(1);
}

log('building the extension');
const build = spawnSync(node, [path.join(root, 'node_modules', '@directus', 'extensions-sdk', 'cli.js'), 'build', '--no-minify'], {
	cwd: root,
	env: nodeEnv(),
	stdio: 'inherit',
});
if (build.status !== 0) {
	log(`extension build failed (exit ${build.status})`);
	process.exit(1);
}

let current = null;
for (const signal of ['SIGINT', 'SIGTERM']) {
	process.on(signal, () => {
		if (current) killGroup(current, 'SIGTERM');
		setTimeout(() => process.exit(130), 20_000).unref();
		current?.once('exit', () => process.exit(130));
		if (!current) process.exit(130);
	});
}

const run = { started: new Date(), commit: gitCommit(), loadBefore: os.loadavg(), benches: [] };
const rows = [];
for (const file of files) {
	const bench = file.replace(/\.bench\.ts$/, '');
	const started = Date.now();
	log(`running bench/${file}`);
	const outcome = await runBench(path.join(benchDir, file));
	const seconds = Number(((Date.now() - started) / 1000).toFixed(0));
	run.benches.push({ bench, file, seconds, lines: outcome.lines, error: outcome.error });
	if (outcome.figures) {
		log(`bench/${file} done in ${seconds} s`);
		for (const figure of outcome.figures) rows.push({ bench, ...figure });
	} else {
		log(`bench/${file} failed in ${seconds} s: ${outcome.error}`);
		rows.push({ bench, name: 'did not report', value: outcome.error, target: '-', pass: false });
	}
}
run.loadAfter = os.loadavg();

const table = markdownTable(rows);
console.log('');
console.log(table);
console.log('');
const resultsFile = path.join(benchDir, 'RESULTS.md');
writeFileSync(resultsFile, resultsDocument(run, table));
log(`wrote ${path.relative(root, resultsFile)}`);
const failed = rows.filter((row) => row.pass === false).length;
const judged = rows.filter((row) => row.pass !== null).length;
const informational = rows.length - judged;
const info = informational > 0 ? ` (and ${informational} informational)` : '';
log(failed === 0 ? `all ${judged} figures with a target meet it${info}` : `${failed} of ${judged} figures with a target miss it${info}`);
process.exit(failed === 0 ? 0 : 1);

/** Runs one bench file as a Node 22 child in its own process group; resolves with its figures or an error. */
function runBench(file) {
	const source = readFileSync(file, 'utf8');
	const entry = /export\s+(?:async\s+)?function\s+(run\w*Bench)\s*\(/.exec(source)?.[1];
	let argv = [file];
	if (!source.includes(PREFIX) && entry) {
		// The bench only exports its runner: call it and print what it returns.
		const script = [
			`const bench = await import(${JSON.stringify(pathToFileURL(file).href)});`,
			`const figures = await bench.${entry}({ log: (line) => console.log(line) });`,
			`process.stdout.write(${JSON.stringify(PREFIX)} + JSON.stringify(figures) + '\\n');`,
			'process.exit(0);',
		].join('\n');
		argv = ['--input-type=module', '--eval', script];
	}
	return new Promise((resolve) => {
		const child = spawn(node, argv, {
			cwd: root,
			env: nodeEnv({ ...process.env, PSEO_BENCH_SKIP_BUILD: '1' }),
			stdio: ['ignore', 'pipe', 'inherit'],
			detached: true,
		});
		current = child;
		let figures = null;
		let invalid = null;
		let pending = '';
		// The bench's own account of the run, for bench/RESULTS.md.
		const lines = [];
		child.stdout.on('data', (chunk) => {
			pending += chunk.toString();
			let newline;
			while ((newline = pending.indexOf('\n')) !== -1) {
				const line = pending.slice(0, newline);
				pending = pending.slice(newline + 1);
				if (!line.startsWith(PREFIX)) {
					process.stdout.write(`${line}\n`);
					lines.push(line);
					continue;
				}
				try {
					figures = parseFigures(JSON.parse(line.slice(PREFIX.length)));
				} catch (error) {
					invalid = `unreadable ${PREFIX.trim()} line (${error.message})`;
				}
			}
		});
		const timer = setTimeout(() => {
			log(`bench ${path.basename(file)} ran past ${timeoutMs} ms; stopping it`);
			killGroup(child, 'SIGTERM');
			setTimeout(() => killGroup(child, 'SIGKILL'), 20_000).unref();
		}, timeoutMs);
		child.on('exit', (code, signal) => {
			clearTimeout(timer);
			current = null;
			if (pending && !pending.startsWith(PREFIX)) {
				process.stdout.write(`${pending}\n`);
				lines.push(pending);
			}
			if (invalid) return resolve({ error: invalid, lines });
			if (code !== 0) return resolve({ error: `exit ${code ?? signal}${figures ? ' after reporting' : ''}`, lines });
			if (!figures) return resolve({ error: `no ${PREFIX.trim()} line`, lines });
			resolve({ figures, lines });
		});
	});
}

/** Checks the BENCH_RESULT payload: an array of { name, value, unit?, target, pass: boolean | null }. */
function parseFigures(value) {
	const list = Array.isArray(value) ? value : Array.isArray(value?.figures) ? value.figures : null;
	if (!list || list.length === 0) throw new TypeError(`expected a non-empty array of figures, got ${JSON.stringify(value)?.slice(0, 200)}`);
	return list.map((figure) => {
		const pass = figure?.pass;
		if (typeof figure?.name !== 'string' || (typeof pass !== 'boolean' && pass !== null) || figure.target === undefined) {
			throw new TypeError(`expected { name, value, target, pass: boolean | null }, got ${JSON.stringify(figure)?.slice(0, 200)}`);
		}
		return { name: figure.name, value: figure.value, unit: figure.unit, target: figure.target, pass: figure.pass };
	});
}

function killGroup(child, signal) {
	try {
		// Negative pid: the bench and everything it started (Directus, the fake provider), not just the bench.
		process.kill(-child.pid, signal);
	} catch {
		// already gone
	}
}

/** One table of every figure, as Markdown: printed, and written into bench/RESULTS.md as is. */
function markdownTable(rows) {
	const header = ['bench', 'figure', 'value', 'target', 'result'];
	const cells = rows.map((row) => [
		row.bench,
		row.name,
		typeof row.value === 'number' ? `${row.value}${row.unit ? ` ${row.unit}` : ''}` : String(row.value),
		String(row.target),
		row.pass === null ? 'info' : row.pass ? 'PASS' : 'FAIL',
	]);
	const widths = header.map((title, i) => Math.max(title.length, ...cells.map((cell) => cell[i].length)));
	const line = (cell) => `| ${cell.map((text, i) => text.padEnd(widths[i])).join(' | ')} |`;
	return [line(header), `|${widths.map((width) => '-'.repeat(width + 2)).join('|')}|`, ...cells.map(line)].join('\n');
}

/** bench/RESULTS.md: what ran, where, the table, each bench's account, and what each figure measures. */
function resultsDocument(run, table) {
	const all = readdirSync(benchDir).filter((name) => name.endsWith('.bench.ts')).map((name) => name.replace(/\.bench\.ts$/, ''));
	const ran = run.benches.map((entry) => entry.bench);
	const skipped = all.filter((bench) => !ran.includes(bench));
	const cpus = os.cpus();
	const load = (values) => values.map((value) => value.toFixed(2)).join(' ');
	const out = [
		'# Benchmark results',
		'',
		'Written by `npm run bench` (`scripts/bench.mjs`) at the end of each run; do not edit by hand. Each figure is a',
		'ratio against a reference measured in the same run, or a bound, because the machines are shared and noisy.',
		'`info` marks an informational figure, which has no target to meet.',
		'',
		`- date: ${run.started.toISOString()}`,
		`- command: \`node scripts/bench.mjs${filters.length ? ` ${filters.join(' ')}` : ''}\``,
		`- benches run: ${ran.join(', ')}${skipped.length ? `; not run: ${skipped.join(', ')}` : ''}`,
		`- commit: ${run.commit}`,
		`- machine: ${cpus.length} cores (${cpus[0]?.model?.trim() ?? 'unknown CPU'}), ${(os.totalmem() / 2 ** 30).toFixed(1)} GiB memory, ${os.type()} ${os.release()} ${os.arch()}`,
		`- Node: ${nodeVersion()} (${node})`,
		`- load average (1, 5, 15 min): ${load(run.loadBefore)} at the start, ${load(run.loadAfter)} at the end`,
		'',
		table,
		'',
	];
	for (const entry of run.benches) {
		out.push(`## ${entry.bench} (\`bench/${entry.file}\`, ${entry.seconds} s)`, '');
		if (entry.error) out.push(`The bench did not report: ${entry.error}.`, '');
		const explanation = path.join(benchDir, `${entry.bench}.md`);
		if (existsSync(explanation)) out.push(readFileSync(explanation, 'utf8').trim(), '');
		if (entry.lines.length > 0) out.push("The bench's own account of this run:", '', '```text', ...entry.lines, '```', '');
	}
	return `${out.join('\n').trimEnd()}\n`;
}

function gitCommit() {
	const head = spawnSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: root, encoding: 'utf8' });
	if (head.status !== 0) return 'unknown (not a git checkout)';
	// RESULTS.md itself changes with every run.
	const dirty = spawnSync('git', ['status', '--porcelain', '--untracked-files=no', '--', '.', ':!bench/RESULTS.md'], {
		cwd: root,
		encoding: 'utf8',
	});
	return `${head.stdout.trim()}${dirty.stdout?.trim() ? ' with uncommitted changes' : ''}`;
}

function nodeVersion() {
	const result = spawnSync(node, ['--version'], { encoding: 'utf8' });
	return result.status === 0 ? result.stdout.trim() : 'unknown';
}

function log(message) {
	console.log(`[bench] ${message}`);
}
