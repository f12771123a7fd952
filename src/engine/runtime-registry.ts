import type { GenerationRuntime } from './runtime.ts';

/*
 * The endpoint and the hook of the bundle share one module graph; this is how a trigger reaches the runtime
 * the hook started. Before server.start (or in a CLI command) there is none, and jobs wait for the sweep.
 */
let current: GenerationRuntime | null = null;

export function setRuntime(runtime: GenerationRuntime | null): void {
	current = runtime;
}

/** Asks the local runtime to look for work now. */
export function kickRuntime(): void {
	current?.kick();
}
