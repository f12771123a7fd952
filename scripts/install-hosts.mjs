// Installs the extra Directus hosts under hosts/ (today: hosts/directus-11 and hosts/directus-12-stock) when missing or when their lock
// changed. npm test runs it before the suites; run it by hand to serve with another host:
//
//   node scripts/install-hosts.mjs [name ...]
//   PSEO_DIRECTUS_HOME=hosts/directus-11 npm start
import { ensureHost, EXTRA_HOSTS } from './lib/hosts.mjs';

const names = process.argv.slice(2);
for (const name of names.length > 0 ? names : EXTRA_HOSTS) ensureHost(name);
