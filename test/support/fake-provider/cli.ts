/**
 * Runs the fake provider as its own process: `node test/support/fake-provider/cli.ts --port 0 [--host 127.0.0.1]
 * [--config '{"latencyMs":50}']`. Prints one JSON line `{"url": ...}` once listening; stops on SIGTERM/SIGINT.
 */
import { parseArgs } from 'node:util';
import { startFakeProvider } from './server.ts';

const { values } = parseArgs({
	options: {
		port: { type: 'string', default: '0' },
		host: { type: 'string', default: '127.0.0.1' },
		config: { type: 'string' },
	},
});

const port = Number(values.port);
const provider = await startFakeProvider({ port, host: values.host });
if (values.config !== undefined) provider.configure(JSON.parse(values.config));
process.stdout.write(`${JSON.stringify({ url: provider.url })}\n`);

let stopping = false;
const stop = (): void => {
	if (stopping) return;
	stopping = true;
	void provider.close().then(() => process.exit(0));
};
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
