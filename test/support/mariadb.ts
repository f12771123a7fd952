import mysql from 'mysql2/promise';
import { MARIADB } from './paths.ts';

/*
 * MariaDB (or MySQL) for the third database leg. MariaDB has no CREATE DATABASE ... TEMPLATE, so a copy is made
 * table by table from the bootstrapped template: its own CREATE TABLE statements (indexes and foreign keys
 * included) and an INSERT ... SELECT, with foreign-key checks off for the copy. That takes about a second,
 * against half a minute for a fresh bootstrap.
 */

async function connect(database?: string) {
	return mysql.createConnection({ ...MARIADB, ...(database ? { database } : {}), connectTimeout: 3000, multipleStatements: false });
}

/** Runs one statement as the test user, on no database in particular. */
export async function mariadbAdmin(sql: string): Promise<void> {
	const connection = await connect();
	try {
		await connection.query(sql);
	} finally {
		await connection.end();
	}
}

/** Whether MariaDB answers on the configured address with the configured user. */
export async function mariadbReachable(): Promise<boolean> {
	try {
		await mariadbAdmin('SELECT 1');
		return true;
	} catch {
		return false;
	}
}

/** Copies the template database `template` into a new database `name`. */
export async function cloneMariaDatabase(template: string, name: string): Promise<void> {
	const connection = await connect();
	try {
		await connection.query(`CREATE DATABASE \`${name}\``);
		await connection.query(`USE \`${name}\``);
		await connection.query('SET FOREIGN_KEY_CHECKS = 0');
		const [tables] = (await connection.query(
			`SELECT TABLE_NAME AS name FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? AND TABLE_TYPE = 'BASE TABLE'`,
			[template],
		)) as unknown as [{ name: string }[]];
		for (const { name: table } of tables) {
			const [[created]] = (await connection.query(`SHOW CREATE TABLE \`${template}\`.\`${table}\``)) as unknown as [Record<string, string>[]];
			// The statement names the table unqualified, and its foreign keys point at tables of the same database:
			// run in the new database, it creates the copy there.
			await connection.query(created!['Create Table']!);
			await connection.query(`INSERT INTO \`${table}\` SELECT * FROM \`${template}\`.\`${table}\``);
		}
	} finally {
		await connection.end();
	}
}

export async function dropMariaDatabase(name: string): Promise<void> {
	await mariadbAdmin(`DROP DATABASE IF EXISTS \`${name}\``);
}

/** Names of the databases whose name starts with `prefix`, to clean up after a run. */
export async function mariaDatabasesLike(prefix: string): Promise<string[]> {
	const connection = await connect();
	try {
		const [rows] = (await connection.query(`SELECT SCHEMA_NAME AS name FROM information_schema.SCHEMATA WHERE SCHEMA_NAME LIKE ?`, [
			`${prefix}%`,
		])) as unknown as [{ name: string }[]];
		return rows.map((row) => row.name);
	} finally {
		await connection.end();
	}
}
