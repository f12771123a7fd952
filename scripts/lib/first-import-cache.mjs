// Directus imports each extension with `?t=<now>` on its URL, so that a reload of the extensions gets fresh modules.
// Node's compile cache (NODE_COMPILE_CACHE) keys its entries by the module's URL, query included: the extension's
// 7 MB bundle was compiled from scratch at every start, and 1.5 MB of cache written for it each time, never to be
// read (the test runs' cache grew by that at every start). Alone, an import of the bundle compiled in 505 ms without
// its cache and 122 ms with it. The first import of a file in a process is fresh whatever its URL, so this hook
// drops such a query from it; every later import of that file (a reload) keeps its query and gets new modules.
import module from 'node:module';

const FRESHNESS_QUERY = /\?t=\d+$/;

/** Installs the hook where Node has synchronous module hooks and its compile cache is on; returns whether it did. */
export function installFirstImportCache() {
	if (typeof module.registerHooks !== 'function' || !module.getCompileCacheDir?.()) return false;
	/** Every file URL resolved so far, without its query: a file seen once is never stripped of its query again. */
	const resolved = new Set();
	module.registerHooks({
		resolve(specifier, context, nextResolve) {
			const result = nextResolve(specifier, context);
			if (!result.url.startsWith('file:')) return result;
			const query = result.url.match(FRESHNESS_QUERY);
			const plain = query ? result.url.slice(0, query.index) : result.url;
			if (resolved.has(plain)) return result;
			resolved.add(plain);
			return query ? { ...result, url: plain } : result;
		},
	});
	return true;
}
