import { inject } from 'vitest';
import { copyDatabase as copyFrom, launchDirectus, type DatabaseCopy, type DirectusInstance, type Leg } from './instance.ts';

export type { DatabaseCopy, DirectusInstance, Leg } from './instance.ts';

/** A fresh database for one test file, copied from the template global-setup bootstrapped. */
export function copyDatabase(leg: Leg): Promise<DatabaseCopy> {
	const template = {
		sqlite: inject('sqliteTemplate'),
		'sqlite-d11': inject('sqliteD11Template'),
		postgres: inject('pgTemplate'),
		mariadb: inject('mariadbTemplate'),
		stock: inject('stockTemplate'),
	}[leg];
	return copyFrom(leg, template, inject('pgPrefix'));
}

/** Starts Directus (as `npm start` does) on a fresh copy of the template, or on `database`. */
export async function startDirectus(options: {
	leg: Leg;
	env?: Record<string, string>;
	database?: DatabaseCopy;
}): Promise<DirectusInstance> {
	const database = options.database ?? (await copyDatabase(options.leg));
	return launchDirectus({ leg: options.leg, database, ...(options.env ? { env: options.env } : {}) });
}
