/** The "pSEO User" role's fixed id (schema/user-policy.ts provisions it with app access). */
export const PSEO_APP_ROLE_ID = '5e0a7c1e-7d1b-4f4e-9a61-3b3f2d9c0a02';

/** Whether the signed-in user is an admin (the app's user store's `admin_access`), who may open Settings → AI. */
export function isAdmin(user: unknown): boolean {
	return (user as { admin_access?: boolean } | null)?.admin_access === true;
}
