import type { ClaimedSourceSync, DataSource } from '../plan/data-source-store.ts';
import { WEBSITES } from '../websites/website-store.ts';
import type { ServiceContext } from '../shared/services.ts';

/**
 * Tells a website's owner, in the Directus app's notifications, that the following of a collection stopped and why.
 * Written as an item of `directus_notifications` (what the app's bell lists), not through NotificationsService,
 * which would also send the owner an email: the instance may have no mail transport, and the stop is on the
 * website's record anyway.
 */
export async function notifyOwner(context: ServiceContext, claim: ClaimedSourceSync, source: DataSource, reason: string): Promise<void> {
	const schema = await context.getSchema({ database: context.database });
	const notifications = new context.services.ItemsService('directus_notifications', { knex: context.database, schema, accountability: null });
	await notifications.createOne({
		recipient: claim.ownerId,
		subject: `pSEO: website ${claim.pseoId} stopped following "${source.collection}"`,
		message: `The plan of website ${claim.pseoId} no longer follows the collection "${source.collection}": ${reason}\n\nImport the collection again with "follow" to resume.`,
		collection: WEBSITES,
		item: String(claim.pseoId),
	});
}
