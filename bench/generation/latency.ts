/**
 * Loopback load with autocannon that compares two endpoints of one server under the very same load: every
 * connection alternates their requests, so a burst of outside load on a shared machine falls on both alike.
 * Every response time is kept (ms, sub-millisecond) for exact percentiles.
 */
import autocannon from 'autocannon';

export interface Target {
	/** Path and query on the server, such as `/items/x/1`. */
	path: string;
	headers: Record<string, string>;
}

export interface InterleavedResult {
	/** Response times of 2xx answers by target index, ms. */
	latencies: number[][];
	non2xx: number;
	errors: number;
}

/**
 * `connections` clients, each sending the targets' requests in turn, against `origin`: for `durationS` seconds,
 * or until `perTarget` requests of each target were sent. autocannon shares an amount evenly among the
 * connections when it divides by them, so with an amount of connections × targets × ceil(perTarget / connections)
 * every connection sends each target's request the same number of times, and each target gets at least
 * `perTarget` answers.
 */
export function interleavedLoad(
	options: { origin: string; targets: Target[]; connections: number } & ({ durationS: number } | { perTarget: number }),
): Promise<InterleavedResult> {
	const { origin, targets, connections } = options;
	if (targets.length === 0) throw new TypeError('Expected at least one target, got none');
	const limit =
		'perTarget' in options
			? { amount: connections * targets.length * Math.ceil(options.perTarget / connections) }
			: { duration: options.durationS };
	const latencies: number[][] = targets.map(() => []);
	// autocannon hands a response to its request's onResponse and then, synchronously, emits 'response' with the
	// latency: the first tells which target the second belongs to.
	let answered = -1;
	const requests = targets.map((target, index) => ({
		method: 'GET',
		path: target.path,
		headers: target.headers,
		onResponse: () => {
			answered = index;
		},
	}));
	return new Promise((resolve, reject) => {
		const instance = autocannon({ url: origin, requests, connections, ...limit, timeout: 10 }, (error, result) => {
			if (error) return reject(error);
			resolve({ latencies, non2xx: result.non2xx, errors: result.errors + result.timeouts });
		});
		instance.on('response', (_client, statusCode, _bytes, responseTime) => {
			if (answered >= 0 && statusCode >= 200 && statusCode < 300) latencies[answered]!.push(responseTime);
			answered = -1;
		});
	});
}

/** The `p`-th percentile (0–100) of `values` by the nearest-rank method; NaN when empty. */
export function percentile(values: readonly number[], p: number): number {
	if (!(p >= 0 && p <= 100)) throw new TypeError(`Expected a percentile from 0 to 100, got ${p}`);
	if (values.length === 0) return Number.NaN;
	const sorted = [...values].sort((a, b) => a - b);
	const rank = Math.max(1, Math.ceil((p / 100) * sorted.length));
	return sorted[rank - 1]!;
}
