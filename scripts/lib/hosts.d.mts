// Types of hosts.mjs, for the test harness (TypeScript) that installs the hosts before the suites.
export declare const HOME_VARIABLE: 'PSEO_DIRECTUS_HOME';
export declare const EXTRA_HOSTS: string[];
export declare function hostDir(name: string): string;
export declare function directusHome(env?: Record<string, string | undefined>): string;
export declare function directusCliEntry(home?: string): string;
export declare function directusVersion(home?: string): string;
export declare function ensureHost(name: string, options?: { log?: (message: string) => void }): boolean;
export declare function ensureHosts(options?: { log?: (message: string) => void }): void;
