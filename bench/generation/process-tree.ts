/** Linux /proc helpers: find a descendant process by its command line, and sample its resident memory. */
import { readFileSync } from 'node:fs';

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
