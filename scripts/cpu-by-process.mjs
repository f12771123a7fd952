// Runs a command and prints the CPU it and everything beside it used, by kind of process: where a test run's time
// goes (docs/testing.md, "Where the run's CPU goes"). Linux only: it reads /proc every half second, so a process
// that lives less than that is missed, and a process's last half second is not counted.
//
//   node scripts/cpu-by-process.mjs -- npm test
import { spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';

const separator = process.argv.indexOf('--');
const [command, ...args] = separator === -1 ? [] : process.argv.slice(separator + 1);
if (!command) {
	console.error('usage: node scripts/cpu-by-process.mjs -- <command> [args...]');
	process.exit(2);
}
const TICKS_PER_SECOND = 100;

/** Whose CPU a process's command line is. */
function kindOf(commandLine) {
	const kinds = [
		[/directus-cli\.mjs start/, 'Directus servers'],
		[/directus-cli\.mjs bootstrap/, 'directus bootstrap'],
		[/directus(\.js)? start|\.bin\/directus start/, 'Directus (stock leg)'],
		[/^postgres/, 'PostgreSQL'],
		[/mariadbd|mysqld/, 'MariaDB'],
		[/vitest/, 'vitest'],
		[/chrom/, 'Chromium'],
		[/\bphp\b/, 'PHP'],
		[/cc1plus|\bcc1\b/, 'native compiles'],
		[/extensions-sdk|rollup|esbuild/, 'extension build'],
		[/\btsc\b/, 'tsc'],
		[/knip/, 'knip'],
		[/\bnpm\b/, 'npm'],
	];
	return kinds.find(([pattern]) => pattern.test(commandLine))?.[1] ?? 'other';
}

/** CPU ticks, command line and start time of every process now, by pid and start time. */
function snapshot() {
	const now = new Map();
	for (const pid of readdirSync('/proc')) {
		if (!/^\d+$/.test(pid)) continue;
		try {
			const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
			const ticks = Number(fields[11]) + Number(fields[12]);
			now.set(`${pid}:${fields[19]}`, { ticks, pid });
		} catch {
			// gone meanwhile
		}
	}
	return now;
}

const seen = new Map();
const record = (first) => {
	for (const [key, { ticks, pid }] of snapshot()) {
		const known = seen.get(key);
		if (known) known.last = ticks;
		else {
			let commandLine = '';
			try {
				commandLine = readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ');
			} catch {
				continue;
			}
			// A process older than the command counts from now; a new one from its start.
			seen.set(key, { kind: kindOf(commandLine), base: first ? ticks : 0, last: ticks });
		}
	}
};

record(true);
const began = Date.now();
const timer = setInterval(() => record(false), 500);
const child = spawn(command, args, { stdio: 'inherit' });
child.on('exit', (code, signal) => {
	clearInterval(timer);
	record(false);
	const byKind = new Map();
	for (const { kind, base, last } of seen.values()) byKind.set(kind, (byKind.get(kind) ?? 0) + (last - base) / TICKS_PER_SECOND);
	const total = [...byKind.values()].reduce((sum, seconds) => sum + seconds, 0);
	const rows = [...byKind].filter(([, seconds]) => seconds >= 0.5).sort((a, b) => b[1] - a[1]);
	console.log(`\nCPU by kind of process, ${total.toFixed(0)} s in ${((Date.now() - began) / 1000).toFixed(0)} s:`);
	for (const [kind, seconds] of rows) console.log(`${seconds.toFixed(1).padStart(9)} s  ${kind}`);
	process.exit(code ?? (signal ? 1 : 0));
});
