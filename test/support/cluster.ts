/**
 * Several Directus instances with the extension on ONE PostgreSQL database and one Redis, the way Directus scales
 * horizontally (operating contract section 5). Used by the multi-instance suite and the chaos run; vitest-free.
 */
import { randomBytes } from 'node:crypto';
import { launchDirectus, type DatabaseCopy, type DirectusInstance } from './instance.ts';
import { REDIS_URL } from './paths.ts';
import { redisDeleteMatching } from './redis.ts';

export { REDIS_URL } from './paths.ts';

export interface ClusterOptions {
	/** Instances to start. Default 3. */
	size?: number;
	/** The shared database; the cluster disposes it once, after every instance stopped. */
	database: DatabaseCopy;
	/** Extra environment for every instance (the fake provider's URL, PSEO_* knobs...). Default {}. */
	env?: Record<string, string>;
	/** Redis of the cluster. Default `PSEO_TEST_REDIS` or redis://127.0.0.1:6379. */
	redisUrl?: string;
	/**
	 * Start every instance at once, as replicas do on a deployment's first start, instead of the first alone.
	 * Default false.
	 */
	together?: boolean;
}

export interface Cluster {
	readonly instances: DirectusInstance[];
	/** Unique per cluster: every Redis namespace of its instances starts with it. */
	readonly runId: string;
	readonly redisUrl: string;
	/** The runtime worker id an instance's current process logged at start, or null before it did. */
	workerOf(instance: DirectusInstance): string | null;
	/** The instance whose current process is `worker` (a job's `lease_owner`), if any. */
	instanceOf(worker: string): DirectusInstance | undefined;
	/** Stops every instance, drops the database once, and deletes the cluster's Redis keys. */
	dispose(): Promise<void>;
}

/**
 * Directus's multi-instance settings: Redis for synchronisation, caches and the rate limiter, with every
 * namespace prefixed by `runId` so that parallel runs on one Redis never see each other's keys.
 */
function redisEnv(redisUrl: string, runId: string): Record<string, string> {
	return {
		REDIS: redisUrl,
		SYNCHRONIZATION_STORE: 'redis',
		SYNCHRONIZATION_NAMESPACE: `${runId}:sync`,
		CACHE_STORE: 'redis',
		CACHE_NAMESPACE: `${runId}:cache`,
		RATE_LIMITER_STORE: 'redis',
		// On, so the Redis store is really exercised; generous, because every test request comes from 127.0.0.1.
		RATE_LIMITER_ENABLED: 'true',
		RATE_LIMITER_POINTS: '100000',
		RATE_LIMITER_DURATION: '1',
		RATE_LIMITER_KEY_PREFIX: `${runId}:rl`,
		REDIS_BUS_NAMESPACE: `${runId}:bus`,
		REDIS_LOCK_NAMESPACE: `${runId}:lock`,
		REDIS_PERMISSIONS_NAMESPACE: `${runId}:permissions`,
		REDIS_COUNTERS_NAMESPACE: `${runId}:counters`,
		HEALTHCHECK_NAMESPACE: `${runId}:healthcheck`,
		LICENSE_NAMESPACE: `${runId}:license`,
		IMPORT_EXPORT_NAMESPACE: `${runId}:import-export`,
	};
}

/**
 * Starts `size` instances on the shared database: the first alone (it runs Directus's bootstrap and the
 * extension's schema install against the database first), the others side by side; or, with `together`, all side
 * by side.
 */
export async function startCluster(options: ClusterOptions): Promise<Cluster> {
	const size = options.size ?? 3;
	if (!Number.isInteger(size) || size < 1) throw new TypeError(`size must be a positive integer, received ${JSON.stringify(options.size)}`);
	const redisUrl = options.redisUrl ?? REDIS_URL;
	const runId = `pseo-mi-${process.pid}-${randomBytes(3).toString('hex')}`;
	const env = {
		...redisEnv(redisUrl, runId),
		// The runtime logs its worker id at info level; that is how a job's lease owner maps to an instance.
		LOG_LEVEL: 'info',
		...options.env,
	};
	// Each instance would drop the database in its own dispose; the cluster owns it instead.
	const shared: DatabaseCopy = { ...options.database, dispose: async () => {} };
	const instances: DirectusInstance[] = [];
	const dispose = async () => {
		await Promise.allSettled(instances.map((instance) => instance.dispose()));
		await options.database.dispose();
		await redisDeleteMatching(redisUrl, `*${runId}*`).catch(() => 0);
	};
	try {
		const launch = () => launchDirectus({ leg: 'postgres', database: shared, env });
		if (!options.together) instances.push(await launch());
		const rest = await Promise.allSettled(Array.from({ length: size - instances.length }, launch));
		for (const result of rest) if (result.status === 'fulfilled') instances.push(result.value);
		const failed = rest.find((result) => result.status === 'rejected');
		if (failed) throw failed.reason;
	} catch (error) {
		await dispose();
		throw error;
	}

	const workerOf = (instance: DirectusInstance): string | null => {
		let worker: string | null = null;
		for (const line of instance.output().split('\n')) {
			if (!line.includes('job runtime started')) continue;
			const match = /"worker":"([^"]+)"/.exec(line);
			if (match?.[1]) worker = match[1];
		}
		return worker;
	};
	return {
		instances,
		runId,
		redisUrl,
		workerOf,
		instanceOf: (worker) => instances.find((instance) => workerOf(instance) === worker),
		dispose,
	};
}
