// Types of install-bundle.mjs, for the test harness (TypeScript) that installs the bundle once for its instances.
export declare const BUNDLE_NAME: 'pseo-automation';
export declare function installBundle(extensionsPath: string, dist?: string): string;
