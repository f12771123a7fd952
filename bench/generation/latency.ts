/** Loopback load with autocannon, keeping every response time (ms, sub-millisecond) for exact percentiles. */
import autocannon from 'autocannon';

export interface LoadRound {
	/** Response times of 2xx answers, ms. */
	latencies: number[];
	requests: number;
	non2xx: number;
	errors: number;
}

/** `connections` clients hammer `url` for `durationS` seconds. */
export function loadRound(options: { url: string; headers: Record<string, string>; connections: number; durationS: number }): Promise<LoadRound> {
	const latencies: number[] = [];
	return new Promise((resolve, reject) => {
		const instance = autocannon(
			{ url: options.url, headers: options.headers, connections: options.connections, duration: options.durationS, timeout: 10 },
			(error, result) => {
				if (error) return reject(error);
				resolve({ latencies, requests: result.requests.total, non2xx: result.non2xx, errors: result.errors + result.timeouts });
			},
		);
		instance.on('response', (_client, statusCode, _bytes, responseTime) => {
			if (statusCode >= 200 && statusCode < 300) latencies.push(responseTime);
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
