// Runs the Directus CLI (bootstrap, start, schema ...) without the update check of the `directus` wrapper
// package, which would reach out to the npm registry on every start.
await import('@directus/api/cli/run.js');
