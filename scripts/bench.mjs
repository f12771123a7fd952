// npm run bench: builds the extension once, runs every bench/*.bench.ts one after the other with Node 22, and
// ends with one table of every figure, its target and PASS/FAIL. Exits 1 when a target fails or a bench breaks.
//
//   node scripts/bench.mjs [name-filter ...]
//
// A bench prints whatever it likes plus one line `BENCH_RESULT [{ name, value, unit?, target, pass }]`. A bench
// file that never prints that line but exports a `run...Bench({ log })` function returning those figures is run
// through that function instead.
// PSEO_BENCH_TIMEOUT_MS bounds each bench (default 25 minutes).
import { spawn, spawnSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
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

const rows = [];
for (const file of files) {
	const bench = file.replace(/\.bench\.ts$/, '');
	const started = Date.now();
	log(`running bench/${file}`);
	const outcome = await runBench(path.join(benchDir, file));
	const seconds = ((Date.now() - started) / 1000).toFixed(0);
	if (outcome.figures) {
		log(`bench/${file} done in ${seconds} s`);
		for (const figure of outcome.figures) rows.push({ bench, ...figure });
	} else {
		log(`bench/${file} failed in ${seconds} s: ${outcome.error}`);
		rows.push({ bench, name: 'did not report', value: outcome.error, target: '-', pass: false });
	}
}

printTable(rows);
const failed = rows.filter((row) => !row.pass).length;
log(failed === 0 ? `all ${rows.length} figures meet their targets` : `${failed} of ${rows.length} figures miss their targets`);
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
		child.stdout.on('data', (chunk) => {
			pending += chunk.toString();
			let newline;
			while ((newline = pending.indexOf('\n')) !== -1) {
				const line = pending.slice(0, newline);
				pending = pending.slice(newline + 1);
				if (!line.startsWith(PREFIX)) {
					process.stdout.write(`${line}\n`);
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
			if (pending && !pending.startsWith(PREFIX)) process.stdout.write(`${pending}\n`);
			if (invalid) return resolve({ error: invalid });
			if (code !== 0) return resolve({ error: `exit ${code ?? signal}${figures ? ' after reporting' : ''}` });
			if (!figures) return resolve({ error: `no ${PREFIX.trim()} line` });
			resolve({ figures });
		});
	});
}

/** Checks the BENCH_RESULT payload: an array of { name, value, unit?, target, pass }. */
function parseFigures(value) {
	const list = Array.isArray(value) ? value : Array.isArray(value?.figures) ? value.figures : null;
	if (!list || list.length === 0) throw new TypeError(`expected a non-empty array of figures, got ${JSON.stringify(value)?.slice(0, 200)}`);
	return list.map((figure) => {
		if (typeof figure?.name !== 'string' || typeof figure.pass !== 'boolean' || figure.target === undefined) {
			throw new TypeError(`expected { name, value, target, pass }, got ${JSON.stringify(figure)?.slice(0, 200)}`);
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

/** One table, as Markdown so it can go into bench/RESULTS.md as is. */
function printTable(rows) {
	const header = ['bench', 'figure', 'value', 'target', 'result'];
	const cells = rows.map((row) => [
		row.bench,
		row.name,
		typeof row.value === 'number' ? `${row.value}${row.unit ? ` ${row.unit}` : ''}` : String(row.value),
		String(row.target),
		row.pass ? 'PASS' : 'FAIL',
	]);
	const widths = header.map((title, i) => Math.max(title.length, ...cells.map((cell) => cell[i].length)));
	const line = (cell) => `| ${cell.map((text, i) => text.padEnd(widths[i])).join(' | ')} |`;
	console.log('');
	console.log(line(header));
	console.log(`|${widths.map((width) => '-'.repeat(width + 2)).join('|')}|`);
	for (const cell of cells) console.log(line(cell));
	console.log('');
}

function log(message) {
	console.log(`[bench] ${message}`);
}
