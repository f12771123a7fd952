import { createHmac, timingSafeEqual } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';

/*
 * A loopback webhook receiver that checks each delivery as docs/publishing.md tells a receiver to: the signature, an
 * HMAC-SHA256 of "t.body" with the target's secret, no older than five minutes. It answers 204 and keeps every
 * delivery, parsed.
 */

interface ReceivedDelivery {
	key: string;
	/** Whether its signature holds for the receiver's secret. */
	valid: boolean;
	payload: Record<string, any>;
}

export interface WebhookReceiver {
	url: string;
	deliveries: ReceivedDelivery[];
	close(): Promise<void>;
}

/** Whether `header` (`t=...,v1=...`) signs `body` with `secret`, within five minutes of now. */
function signatureHolds(secret: string, header: string, body: string): boolean {
	const parts = new Map(header.split(',').map((part) => part.split('=', 2) as [string, string]));
	const sentAt = Number(parts.get('t'));
	const given = Buffer.from(parts.get('v1') ?? '', 'hex');
	if (!Number.isInteger(sentAt) || Math.abs(Date.now() / 1000 - sentAt) > 300) return false;
	const expected = createHmac('sha256', secret).update(`${sentAt}.${body}`).digest();
	return given.length === expected.length && timingSafeEqual(given, expected);
}

/** Starts a receiver on 127.0.0.1 that verifies deliveries signed with `secret`. */
export async function startWebhookReceiver(secret: string): Promise<WebhookReceiver> {
	const deliveries: ReceivedDelivery[] = [];
	const server = http.createServer((req, res) => {
		let body = '';
		req.setEncoding('utf8');
		req.on('data', (chunk: string) => (body += chunk));
		req.on('end', () => {
			deliveries.push({ key: String(req.headers['idempotency-key'] ?? ''), valid: signatureHolds(secret, String(req.headers['x-pseo-signature'] ?? ''), body), payload: JSON.parse(body || '{}') });
			res.writeHead(204).end();
		});
	});
	await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
	return {
		url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks/pseo`,
		deliveries,
		close: () => new Promise<void>((resolve) => server.close(() => resolve())),
	};
}
