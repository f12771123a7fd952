/**
 * The one place where the extension copes with differences between the Directus versions it runs on (the
 * `directus:extension.host` range in package.json: Directus 11.16+ and 12.x). Everything else in the extension
 * uses what both hosts offer alike: policies, roles and access rows (Directus 11 introduced them), the items
 * services with `<collection>.items.query|create|update` filters, `init('app.before' | 'middlewares.before' |
 * 'routes.custom.after')`, and the `SchemaService` snapshot, diff and apply.
 *
 * Differences, and how the extension copes:
 *
 * - **Licence limits.** Directus 12's Core licence counts app-access users against three seats, ignores
 *   item-level permission rules, and locks an instance down over its limits. Directus 11 has none of this. The
 *   extension is written for the stricter host and behaves the same on both: its policy grants whole collections
 *   and the ownership guard (src/access/ownership-guard.ts) narrows every read and write to the caller's rows;
 *   API clients take the "pSEO API Client" role, which has no app access and so takes no seat on 12. Nothing
 *   here needs to branch on the host for that.
 * - **Schema snapshot version.** Directus 12 writes and reads partial snapshots, marked `version: 2`, which is
 *   what snapshots/pseo-schema.json is (it lists only the extension's collections). Directus 11 knows only
 *   `version: 1` and refuses anything else. The entries of both formats are alike, and the extension applies
 *   the diff additively anyway (src/schema/install-schema.ts), so on Directus 11 the snapshot is presented as
 *   version 1: see {@link snapshotForHost}.
 */

/** The major version of the running Directus, from the `directus` field of its own schema snapshot. */
export function hostMajor(hostVersion: string): number {
	const major = Number.parseInt(hostVersion, 10);
	if (!Number.isInteger(major)) throw new TypeError(`Expected a Directus version such as "12.3.1", got ${JSON.stringify(hostVersion)}`);
	return major;
}

/** The extension's schema snapshot in the format the running Directus (`hostVersion`) accepts. */
export function snapshotForHost<T extends { version: number }>(snapshot: T, hostVersion: string): T {
	return hostMajor(hostVersion) < 12 ? { ...snapshot, version: 1 } : snapshot;
}
