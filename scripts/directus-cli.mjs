// Runs the Directus CLI (bootstrap, start, schema ...) without the update check of the `directus` wrapper
// package, which would reach out to the npm registry on every start. The Directus it runs is the one installed
// under PSEO_DIRECTUS_HOME (default: this project's own; see scripts/lib/hosts.mjs).
import { pathToFileURL } from 'node:url';
import { directusCliEntry } from './lib/hosts.mjs';

await import(pathToFileURL(directusCliEntry()).href);
