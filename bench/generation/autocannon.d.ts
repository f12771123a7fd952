// The few parts of autocannon 9 the benchmarks use (the package ships no types).
declare module 'autocannon' {
	import type { EventEmitter } from 'node:events';

	interface Request {
		method?: string;
		path?: string;
		headers?: Record<string, string>;
		onResponse?: (status: number, body: string, context: Record<string, unknown>) => void;
	}

	interface Options {
		url: string;
		requests?: Request[];
		method?: string;
		headers?: Record<string, string>;
		connections?: number;
		duration?: number;
		/** Requests in all, shared evenly among the connections; overrides `duration`. */
		amount?: number;
		pipelining?: number;
		timeout?: number;
	}

	interface Result {
		requests: { total: number };
		non2xx: number;
		errors: number;
		timeouts: number;
	}

	interface Instance extends EventEmitter {
		on(event: 'response', listener: (client: unknown, statusCode: number, resBytes: number, responseTime: number) => void): this;
		on(event: 'done', listener: (result: Result) => void): this;
		on(event: string, listener: (...args: unknown[]) => void): this;
		stop(): void;
	}

	function autocannon(options: Options, callback: (error: Error | null, result: Result) => void): Instance;
	export default autocannon;
}
