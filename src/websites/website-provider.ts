import type { Knex } from 'knex';
import { InvalidPayloadError } from '../errors/index.ts';
import type { ProviderPlan, ProviderSource } from '../provider/provider-source.ts';
import { readWebsiteProvider } from './website-store.ts';

/**
 * The provider and model a website's job or plan runs with: those the website names, else the instance's
 * defaults. A model that Settings → AI does not allow for the provider is refused here, with a 400, rather than
 * discovered at the provider after the tokens were charged.
 */
export async function chooseForWebsite(database: Knex, providers: Pick<ProviderSource, 'choose'>, pseoId: number): Promise<ProviderPlan> {
	const plan = await providers.choose(await readWebsiteProvider(database, pseoId));
	if (plan.refused) throw new InvalidPayloadError({ reason: plan.refused });
	return plan;
}

/** `StartJobDeps.pickProvider` for a source: what a job of the website records as its provider and model. */
export function providerPicker(database: Knex, providers: ProviderSource): (pseoId: number) => Promise<{ kind: string; model: string }> {
	return async (pseoId) => {
		const { kind, model } = await chooseForWebsite(database, providers, pseoId);
		return { kind, model };
	};
}
