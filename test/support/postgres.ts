import pg from 'pg';
import { PG } from './paths.ts';

/** Runs one statement on the maintenance database. */
export async function pgAdmin<T = unknown>(sql: string, database = 'postgres'): Promise<T[]> {
	const client = new pg.Client({ ...PG, database, connectionTimeoutMillis: 3000 });
	await client.connect();
	try {
		return (await client.query(sql)).rows as T[];
	} finally {
		await client.end();
	}
}

/** Whether PostgreSQL answers on the configured address. */
export async function postgresReachable(): Promise<boolean> {
	try {
		await pgAdmin('select 1');
		return true;
	} catch {
		return false;
	}
}

/** Copies a template database; PostgreSQL's CREATE DATABASE ... TEMPLATE is a fast file copy. */
export async function cloneDatabase(template: string, name: string): Promise<void> {
	await pgAdmin(`CREATE DATABASE "${name}" TEMPLATE "${template}"`);
}

export async function dropDatabase(name: string): Promise<void> {
	await pgAdmin(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
}
