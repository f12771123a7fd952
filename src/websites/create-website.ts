import type { Accountability, SchemaOverview } from '@directus/types';
import type { ServiceContext } from '../shared/services.ts';
import { WEBSITES } from './website-store.ts';
import type { ProviderKind } from '../shared/provider-kinds.ts';

/** A website to register, as POST /pseo gives it once validated. */
export interface NewWebsite {
	website_url: string;
	master_prompt: string;
	website_software: string;
	/** The provider and model the website names; null for the instance's defaults. */
	provider: ProviderKind | null;
	model: string | null;
}

export interface WebsiteRecord {
	id: number;
	website_url: string;
	website_software: string;
	backend_user_id: string;
	post_counts_total: number;
}

/**
 * Registers a website for the caller. The items service runs with the caller's accountability, so Directus's
 * permissions, the `user-created` owner field and the activity trail all apply.
 */
export async function createWebsite(
	context: ServiceContext,
	accountability: Accountability,
	schema: SchemaOverview,
	website: NewWebsite,
): Promise<WebsiteRecord> {
	const items = new context.services.ItemsService(WEBSITES, { accountability, schema, knex: context.database });
	const id = await items.createOne({ ...website });
	const row = (await items.readOne(id, {
		fields: ['id', 'website_url', 'website_software', 'backend_user_id', 'post_counts_total'],
	})) as WebsiteRecord;
	return { ...row, id: Number(row.id), post_counts_total: Number(row.post_counts_total ?? 0) };
}
