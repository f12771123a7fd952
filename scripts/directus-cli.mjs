// Runs the Directus CLI (bootstrap, start, schema ...) without the update check of the `directus` wrapper
// package, which would reach out to the npm registry on every start. The Directus it runs is the one installed
// under PSEO_DIRECTUS_HOME (default: this project's own; see scripts/lib/hosts.mjs).
import { pathToFileURL } from 'node:url';
import { directusCliEntry } from './lib/hosts.mjs';
import { installFirstImportCache } from './lib/first-import-cache.mjs';
import { installModuleFormatCache } from './lib/module-format-cache.mjs';

// Before Directus's modules load: a start then resolves them in a fraction of the time (see the module).
installModuleFormatCache();
// Where Node's compile cache is on (the test instances): an extension's first import hits it (see the module).
installFirstImportCache();
await import(pathToFileURL(directusCliEntry()).href);
