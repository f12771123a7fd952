import { createHmac } from 'node:crypto';
import { OutboundError, type OutboundClient, type OutboundResponse } from './outbound-client.ts';
import { backoffDelay, defaultSleep, retryAfterMs, type Sleep } from '../provider/backoff.ts';

/*
 * Deliveries to a webhook receiver (any CMS, Zapier, Make, n8n): a JSON POST signed like Stripe's, so a receiver
 * can prove the sender and refuse replays. `X-PSEO-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256 of "t.body">`
 * under the shared secret; the timestamp is inside the signed text, so an old delivery replayed later fails the
 * receiver's age check. `Idempotency-Key` names the post version: a receiver that stores it does each version once,
 * however often a delivery is retried.
 */

const SIGNATURE_HEADER = 'X-PSEO-Signature';

/** The signature header's value for `body` at `timestamp` (seconds). */
export function signatureFor(secret: string, timestamp: number, body: string): string {
	const digest = createHmac('sha256', secret).update(`${timestamp}.${body}`).digest('hex');
	return `t=${timestamp},v1=${digest}`;
}

export interface WebhookDelivery {
	url: string;
	secret: string;
	idempotencyKey: string;
	payload: unknown;
}

/** The receiver never answered 2xx; `status` is its last answer, if any. */
export class WebhookRefusedError extends Error {
	readonly status: number | null;
	constructor(status: number | null, message: string) {
		super(message);
		this.name = 'WebhookRefusedError';
		this.status = status;
	}
}

/**
 * Delivers once a 2xx comes back. Any other answer is retried with backoff (the receiver's `retry-after` wins)
 * up to `maxAttempts`, every attempt freshly signed; then WebhookRefusedError. Connection failures are retried
 * by the client itself; an address the guard refuses is not retried.
 */
export async function deliverWebhook(
	http: OutboundClient,
	delivery: WebhookDelivery,
	options: { maxAttempts: number; backoffBaseMs: number; signal?: AbortSignal; sleep?: Sleep; now?: () => number },
): Promise<void> {
	const body = JSON.stringify(delivery.payload);
	const sleep = options.sleep ?? defaultSleep;
	const now = options.now ?? Date.now;
	let last = 'no answer';
	let lastStatus: number | null = null;
	for (let attempt = 1; attempt <= options.maxAttempts; attempt++) {
		const timestamp = Math.floor(now() / 1000);
		let response: OutboundResponse | null = null;
		try {
			response = await http.send(
				{
					method: 'POST',
					url: delivery.url,
					body,
					retry: false,
					headers: { [SIGNATURE_HEADER]: signatureFor(delivery.secret, timestamp, body), 'Idempotency-Key': delivery.idempotencyKey },
				},
				options.signal,
			);
		} catch (error) {
			// Refused by the guard or not a URL: no retry can change that.
			if (!(error instanceof OutboundError) || (error.kind !== 'network' && error.kind !== 'timeout')) throw error;
			last = error.message;
		}
		if (response && response.status >= 200 && response.status < 300) return;
		if (response) {
			lastStatus = response.status;
			last = `the receiver answered HTTP ${response.status}`;
		}
		if (attempt < options.maxAttempts) {
			const asked = response ? retryAfterMs(response.headers, 120_000) : null;
			await sleep(asked ?? backoffDelay(attempt, { baseMs: options.backoffBaseMs, maxMs: 30_000 }), options.signal);
		}
	}
	throw new WebhookRefusedError(lastStatus, `${last} after ${options.maxAttempts} attempts`);
}
