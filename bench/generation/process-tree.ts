/** Linux /proc helpers: find a descendant process by its command line, and sample its resident memory and CPU time. */
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';

/** Direct children of `pid` (every thread's list), or [] when it is gone. */
function childPids(pid: number): number[] {
	const children: number[] = [];
	let tasks: string[] = [];
	try {
		tasks = readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/);
	} catch {
		return [];
	}
	for (const entry of tasks) if (entry) children.push(Number(entry));
	return children;
}

/** The command line of `pid` with spaces between arguments, or '' when it is gone. */
function commandLine(pid: number): string {
	try {
		return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').join(' ').trim();
	} catch {
		return '';
	}
}

/** The first descendant of `root` (breadth first) whose command line matches, or null. */
export function findDescendant(root: number, match: (commandLine: string) => boolean): number | null {
	const queue = childPids(root);
	while (queue.length > 0) {
		const pid = queue.shift()!;
		if (match(commandLine(pid))) return pid;
		queue.push(...childPids(pid));
	}
	return null;
}

/** Every descendant of `root`, parents before their children. */
export function descendants(root: number): number[] {
	const found: number[] = [];
	const queue = childPids(root);
	while (queue.length > 0) {
		const pid = queue.shift()!;
		found.push(pid);
		queue.push(...childPids(pid));
	}
	return found;
}

/** VmRSS of `pid` in kB, or null when the process is gone. */
function readRssKb(pid: number): number | null {
	try {
		const match = /^VmRSS:\s+(\d+)\s+kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
		return match ? Number(match[1]) : null;
	} catch {
		return null;
	}
}

export interface RssSample {
	/** ms since the epoch. */
	time: number;
	kb: number;
}

/** Samples a process's VmRSS every `intervalMs` until stopped. */
export class RssSampler {
	readonly samples: RssSample[] = [];
	readonly #pid: number;
	readonly #intervalMs: number;
	#timer: NodeJS.Timeout | null = null;

	constructor(pid: number, intervalMs = 50) {
		if (!Number.isInteger(pid) || pid <= 0) throw new TypeError(`Expected a process id, got ${pid}`);
		if (!Number.isFinite(intervalMs) || intervalMs <= 0) throw new TypeError(`Expected a positive interval, got ${intervalMs}`);
		this.#pid = pid;
		this.#intervalMs = intervalMs;
	}

	start(): void {
		if (this.#timer) return;
		const sample = () => {
			const kb = readRssKb(this.#pid);
			if (kb !== null) this.samples.push({ time: Date.now(), kb });
		};
		sample();
		this.#timer = setInterval(sample, this.#intervalMs);
	}

	stop(): void {
		if (this.#timer) clearInterval(this.#timer);
		this.#timer = null;
	}

	/** Samples taken in [from, to]. */
	between(from: number, to: number): RssSample[] {
		return this.samples.filter((sample) => sample.time >= from && sample.time <= to);
	}

	/** Highest RSS in [from, to] in kB, or null without samples there. */
	peakKb(from: number, to: number): number | null {
		const window = this.between(from, to);
		return window.length === 0 ? null : Math.max(...window.map((sample) => sample.kb));
	}

	/** Mean RSS in [from, to] in kB, or null without samples there. */
	meanKb(from: number, to: number): number | null {
		const window = this.between(from, to);
		return window.length === 0 ? null : window.reduce((sum, sample) => sum + sample.kb, 0) / window.length;
	}
}

/** Clock ticks per second of /proc's CPU times (USER_HZ): 100 on every Linux we run on, asked once. */
function clockTicks(): number {
	try {
		const ticks = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim());
		return Number.isInteger(ticks) && ticks > 0 ? ticks : 100;
	} catch {
		return 100;
	}
}

/** utime + stime of `pid` (every thread of it) in ticks, or null when it is gone. */
function readCpuTicks(pid: number): number | null {
	try {
		const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
		// The command name may hold spaces and parentheses; the fields after its closing one are fixed.
		const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
		return Number(fields[11]) + Number(fields[12]);
	} catch {
		return null;
	}
}

/**
 * The whole machine's CPU ticks from the first line of /proc/stat: `busy` (user, nice, system, irq, softirq) and
 * `steal` (time the hypervisor gave another guest), or null where there is no /proc/stat.
 */
function readMachineTicks(): { busy: number; steal: number } | null {
	try {
		const fields = readFileSync('/proc/stat', 'utf8').split('\n', 1)[0]!.trim().split(/\s+/).slice(1).map(Number);
		const [user = 0, nice = 0, system = 0, , , irq = 0, softirq = 0, steal = 0] = fields;
		return { busy: user + nice + system + irq + softirq, steal };
	} catch {
		return null;
	}
}

/** Processes whose command name (`/proc/<pid>/comm`) is `name`: a server's backends, which come and go. */
export function processesNamed(name: string): () => number[] {
	return () => {
		const found: number[] = [];
		for (const entry of readdirSync('/proc')) {
			if (!/^\d+$/.test(entry)) continue;
			try {
				if (readFileSync(`/proc/${entry}/comm`, 'utf8').trim() === name) found.push(Number(entry));
			} catch {
				// gone meanwhile
			}
		}
		return found;
	};
}

interface CpuSample {
	/** ms since the epoch. */
	time: number;
	/** CPU ms each group has used since sampling started. */
	used: number[];
	/** CPU ms the whole machine was busy, and was stolen by the hypervisor, since the epoch of /proc/stat. */
	machine: { busy: number; steal: number } | null;
}

/**
 * Samples the CPU time of groups of processes (a fixed pid, or a lister of pids that come and go, such as a
 * database server's backends) every `intervalMs`, so that what each group used in a window can be read afterwards.
 * A process that ends between two samples loses what it used after the earlier one; one born between them counts
 * from its start.
 */
export class CpuSampler {
	readonly #groups: (() => number[])[];
	readonly #intervalMs: number;
	readonly #msPerTick = 1000 / clockTicks();
	readonly #samples: CpuSample[] = [];
	readonly #last: Map<number, number>[];
	readonly #used: number[];
	#seenAtStart: boolean[] = [];
	#timer: NodeJS.Timeout | null = null;

	constructor(groups: (number | (() => number[]))[], intervalMs = 200) {
		this.#groups = groups.map((group) => (typeof group === 'number' ? () => [group] : group));
		this.#intervalMs = intervalMs;
		this.#last = groups.map(() => new Map());
		this.#used = groups.map(() => 0);
	}

	start(): void {
		if (this.#timer) return;
		let first = true;
		const sample = () => {
			this.#groups.forEach((list, index) => {
				const last = this.#last[index]!;
				const seen = new Map<number, number>();
				for (const pid of list()) {
					const ticks = readCpuTicks(pid);
					if (ticks === null) continue;
					seen.set(pid, ticks);
					// Never negative: a pid reused by a new process starts below the old one's count.
					if (!first) this.#used[index]! += Math.max(0, ticks - (last.get(pid) ?? 0)) * this.#msPerTick;
				}
				this.#last[index] = seen;
				if (first) this.#seenAtStart[index] = seen.size > 0;
			});
			first = false;
			const machine = readMachineTicks();
			this.#samples.push({
				time: Date.now(),
				used: [...this.#used],
				machine: machine && { busy: machine.busy * this.#msPerTick, steal: machine.steal * this.#msPerTick },
			});
		};
		sample();
		this.#timer = setInterval(sample, this.#intervalMs);
	}

	stop(): void {
		if (this.#timer) clearInterval(this.#timer);
		this.#timer = null;
	}

	/** Whether the group at `index` had a process at the first sample (a server on another machine has none here). */
	sawGroup(index: number): boolean {
		return this.#seenAtStart[index] ?? false;
	}

	/**
	 * CPU ms each group used in [from, to], read between the samples nearest to both ends; null when either end is
	 * more than one interval from a sample (outside the sampled time).
	 */
	usedBetween(from: number, to: number): number[] | null {
		const ends = this.#ends(from, to);
		return ends && ends.end.used.map((used, index) => used - ends.start.used[index]!);
	}

	/**
	 * CPU ms the whole machine was busy in [from, to] (every process, these groups' and anyone else's), and ms the
	 * hypervisor gave to other guests; null outside the sampled time or without /proc/stat. Less the groups' own
	 * use, it tells how much of the cores something else took while a figure was measured.
	 */
	machineBetween(from: number, to: number): { busy: number; steal: number } | null {
		const ends = this.#ends(from, to);
		if (!ends?.start.machine || !ends.end.machine) return null;
		return { busy: ends.end.machine.busy - ends.start.machine.busy, steal: ends.end.machine.steal - ends.start.machine.steal };
	}

	#ends(from: number, to: number): { start: CpuSample; end: CpuSample } | null {
		const at = (time: number) => this.#samples.reduce<CpuSample | null>((best, sample) => (!best || Math.abs(sample.time - time) < Math.abs(best.time - time) ? sample : best), null);
		const start = at(from);
		const end = at(to);
		if (!start || !end || end.time <= start.time) return null;
		if (Math.abs(start.time - from) > this.#intervalMs || Math.abs(end.time - to) > this.#intervalMs) return null;
		return { start, end };
	}
}
