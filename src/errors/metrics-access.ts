import { createError } from '@directus/errors';

export const messageConstructor = () => 'Only admins, and the user whose static token is PSEO_METRICS_TOKEN, may read the metrics.';

/** 403: the metrics are for operators, not for every user of the instance. */
export const MetricsAccessError = createError('PSEO_FORBIDDEN', messageConstructor, 403);
