// MCP benchmarks over stdio with the official SDK client:
//  - environment_execute round trip of /bin/true (median, p90 over N calls)
//  - create -> execute -> destroy cycles per second over one session
// Usage: node bench/mcp_bench.mjs SBX_BIN [N] [SECONDS]
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const require = createRequire(path.join(here, '../tests/mcp/package.json'));
const { Client } = require('@modelcontextprotocol/sdk/client/index.js');
const { StdioClientTransport } = require('@modelcontextprotocol/sdk/client/stdio.js');

const [sbx, nArg, secArg] = process.argv.slice(2);
const N = Number(nArg || 300);
const SECONDS = Number(secArg || 10);
const transport = new StdioClientTransport({ command: sbx, args: ['mcp'], env: process.env, stderr: 'inherit' });
const client = new Client({ name: 'sbx-bench', version: '1' });
await client.connect(transport);
const call = async (name, args) => {
	const r = await client.callTool({ name, arguments: args });
	if (r.isError) throw new Error(`${name}: ${JSON.stringify(r.structuredContent)}`);
	return r.structuredContent;
};
const median = (a) => a.slice().sort((x, y) => x - y)[Math.floor(a.length / 2)];
const p90 = (a) => a.slice().sort((x, y) => x - y)[Math.floor(a.length * 0.9)];

const { environment_id: id } = await call('environment_create', {});
const rtt = [];
for (let i = 0; i < N + 20; i++) {
	const t0 = process.hrtime.bigint();
	await call('environment_execute', { environment_id: id, argv: ['/bin/true'] });
	const ms = Number(process.hrtime.bigint() - t0) / 1e6;
	if (i >= 20) rtt.push(ms);
}
await call('environment_destroy', { environment_id: id });

let cycles = 0;
const start = Date.now();
while (Date.now() - start < SECONDS * 1000) {
	const { environment_id } = await call('environment_create', {});
	await call('environment_execute', { environment_id, argv: ['/bin/true'] });
	await call('environment_destroy', { environment_id });
	cycles++;
}
const rate = cycles / ((Date.now() - start) / 1000);
console.log(JSON.stringify({ execute_median_ms: median(rtt), execute_p90_ms: p90(rtt), calls: N, cycles, cycles_per_second: rate }));
await client.close();
