import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const SRC = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', 'src');

/** Each table the extension writes, and the one module that owns it: only that module names it in a literal. */
const OWNERS: Record<string, string> = {
	pseo: 'websites/website-store.ts',
	pseo_generations: 'engine/job-store.ts',
	pseo_generation_routes: 'engine/job-route-store.ts',
	pseo_posts: 'posts/post-store.ts',
	pseo_main_json: 'plan/plan-store.ts',
	pseo_token_ledger: 'ledger/token-ledger.ts',
	pseo_post_bands: 'quality/similarity-index.ts',
	pseo_plan_pages: 'plan/plan-page-store.ts',
	directus_users: 'ledger/token-ledger.ts',
	pseo_publications: 'publishing/publication-store.ts',
	pseo_publishing_targets: 'publishing/target-store.ts',
	pseo_batch_capacity: 'engine/batch-capacity.ts',
	pseo_provider_pacing: 'provider/pacing/database-pacing-store.ts',
	pseo_schema_state: 'schema/schema-fingerprint.ts',
};

function sources(dir = SRC): string[] {
	return readdirSync(dir).flatMap((name) => {
		const file = path.join(dir, name);
		if (statSync(file).isDirectory()) return sources(file);
		return name.endsWith('.ts') && !name.endsWith('.test.ts') ? [file] : [];
	});
}

const folderOf = (file: string) => path.relative(SRC, file).split(path.sep)[0]!;

/** Folder -> folders it imports from (relative .ts imports only). */
function folderGraph(): Map<string, Set<string>> {
	const graph = new Map<string, Set<string>>();
	for (const file of sources()) {
		const from = folderOf(file);
		const edges = graph.get(from) ?? new Set<string>();
		graph.set(from, edges);
		for (const match of readFileSync(file, 'utf8').matchAll(/(?:from|import)\s*\(?\s*'(\.{1,2}\/[^']+\.ts)'/g)) {
			const target = path.resolve(path.dirname(file), match[1]!);
			if (!target.startsWith(SRC)) continue;
			const to = folderOf(target);
			if (to !== from) edges.add(to);
		}
	}
	return graph;
}

function findCycle(graph: Map<string, Set<string>>): string[] | null {
	const state = new Map<string, 'open' | 'done'>();
	const stack: string[] = [];
	const visit = (node: string): string[] | null => {
		if (state.get(node) === 'done') return null;
		if (state.get(node) === 'open') return [...stack.slice(stack.indexOf(node)), node];
		state.set(node, 'open');
		stack.push(node);
		for (const next of graph.get(node) ?? []) {
			const cycle = visit(next);
			if (cycle) return cycle;
		}
		stack.pop();
		state.set(node, 'done');
		return null;
	};
	for (const node of graph.keys()) {
		const cycle = visit(node);
		if (cycle) return cycle;
	}
	return null;
}

describe('layout of src/', () => {
	it('the folder graph has no cycle', () => {
		const graph = folderGraph();
		expect(graph.size).toBeGreaterThan(10);
		expect(findCycle(graph)).toBeNull();
	});

	it('the cycle check finds a cycle when there is one', () => {
		const graph = new Map([
			['a', new Set(['b'])],
			['b', new Set(['c'])],
			['c', new Set(['a'])],
		]);
		expect(findCycle(graph)).toEqual(['a', 'b', 'c', 'a']);
	});

	it('no module outside a table\'s owner names that table in a literal', () => {
		const offenders: string[] = [];
		for (const file of sources()) {
			const relative = path.relative(SRC, file);
			// The app module runs in the browser, a client of Directus's items API and WebSocket subscriptions: it names
			// the collections it reads there, and cannot import the server's owners (they bring Knex).
			if (relative.startsWith(`pseo-module${path.sep}`)) continue;
			const text = readFileSync(file, 'utf8');
			for (const [table, owner] of Object.entries(OWNERS)) {
				if (relative === owner) continue;
				// A quoted name, or the name as a word inside a quoted SQL or template string.
				// The quoted name exactly (PSEO_PLAN_PAGES, a setting, is not the table pseo_plan_pages), or the name as a
				// word after an SQL keyword of any case inside a quoted SQL or template string.
				const quoted = new RegExp(`['"\`]${table}['"\`]`);
				const inSql = new RegExp(`['"\`][^'"\`\\n]*\\b(?:FROM|INTO|UPDATE|ON|JOIN|TABLE)\\s+${table}\\b`, 'i');
				if (quoted.test(text) || inSql.test(text)) offenders.push(`${relative} names ${table}`);
			}
		}
		expect(offenders).toEqual([]);
	});

	it('every owner declares its table name once, as a constant', () => {
		for (const [table, owner] of Object.entries(OWNERS)) {
			expect(readFileSync(path.join(SRC, owner), 'utf8'), owner).toMatch(new RegExp(`const [A-Z_]+ = '${table}';`));
		}
	});

	it('src/generation/ is gone: jobs, engine, page and provider each hold one concern', () => {
		const folders = readdirSync(SRC);
		expect(folders).not.toContain('generation');
		expect(folders).toEqual(expect.arrayContaining(['jobs', 'engine', 'page', 'provider']));
	});
});
