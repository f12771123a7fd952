import { defineModule } from '@directus/extensions-sdk';
import WebsitesView from './routes/websites-view.vue';
import WebsiteView from './routes/website-view.vue';
import LedgerView from './routes/ledger-view.vue';
import { PSEO_APP_ROLE_ID } from './lib/roles.ts';

/**
 * "pSEO" in the app's module bar: the editors' workspace over /pseo-endpoints. Shown to admins and to users with the
 * pSEO User role (the role the extension provisions with app access); start-up adds it to the module bar.
 */
export default defineModule({
	id: 'pseo-workspace',
	name: 'pSEO',
	icon: 'travel_explore',
	routes: [
		{ path: '', component: WebsitesView },
		{ path: 'ledger', component: LedgerView },
		{ path: ':id', component: WebsiteView, props: true },
	],
	preRegisterCheck(user) {
		const current = user as { admin_access?: boolean; role?: { id?: string } | string | null };
		const role = typeof current.role === 'string' ? current.role : current.role?.id;
		return current.admin_access === true || role === PSEO_APP_ROLE_ID;
	},
});
