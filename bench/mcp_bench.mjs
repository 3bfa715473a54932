// MCP benchmarks with the official SDK client:
//  - environment_execute round trip of /bin/true over stdio (median, p90 over N calls)
//  - create -> execute -> destroy cycles per second over one stdio session, cold (no pool)
//    and with a warm pool (pool_set host, POOL entries, filled before the run)
//  - the same cycles over HTTP_CLIENTS concurrent Streamable HTTP sessions (`sbx serve`,
//    URL and TOKEN given), with the pool; the SDK's transport with node's fetch (its
//    default), and again given a fetch over node:http (mcp_http_fetch.mjs: the client's
//    own CPU per request is a quarter)
// Usage: node bench/mcp_bench.mjs SBX_BIN [N] [SECONDS] [POOL] [URL TOKEN_FILE HTTP_CLIENTS]
import { createRequire } from 'node:module';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const require = createRequire(path.join(here, '../tests/mcp/package.json'));
const { Client } = require('@modelcontextprotocol/sdk/client/index.js');
const { StdioClientTransport } = require('@modelcontextprotocol/sdk/client/stdio.js');
const { StreamableHTTPClientTransport } = require('@modelcontextprotocol/sdk/client/streamableHttp.js');
const { httpFetch } = await import('./mcp_http_fetch.mjs');

const [sbx, nArg, secArg, poolArg, url, tokenFile, httpArg] = process.argv.slice(2);
const N = Number(nArg || 300);
const SECONDS = Number(secArg || 10);
const POOL = Number(poolArg || 64);
const HTTP_CLIENTS = Number(httpArg || 4);
const median = (a) => a.slice().sort((x, y) => x - y)[Math.floor(a.length / 2)];
const p90 = (a) => a.slice().sort((x, y) => x - y)[Math.floor(a.length * 0.9)];
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function stdioClient(env = process.env, args = ['mcp', '--warm', '0']) {
	const transport = new StdioClientTransport({ command: sbx, args, env, stderr: 'inherit' });
	const client = new Client({ name: 'sbx-bench', version: '1' });
	await client.connect(transport);
	return client;
}
async function httpClient(nodeHttp = false) {
	const token = fs.readFileSync(tokenFile, 'utf8').trim();
	const transport = new StreamableHTTPClientTransport(new URL(url), {
		...(nodeHttp ? { fetch: httpFetch } : {}),
		requestInit: { headers: { Authorization: `Bearer ${token}` } },
	});
	const client = new Client({ name: 'sbx-bench-http', version: '1' });
	await client.connect(transport);
	return client;
}
const caller = (client) => async (name, args) => {
	const r = await client.callTool({ name, arguments: args });
	if (r.isError) throw new Error(`${name}: ${JSON.stringify(r.structuredContent)}`);
	return r.structuredContent;
};
async function fillPool(call, size) {
	await call('pool_set', { source: 'host', size });
	for (let i = 0; i < 6000; i++) {
		const { pools } = await call('pool_list', {});
		if (pools.reduce((n, p) => n + p.ready, 0) >= size) return;
		await sleep(50);
	}
	throw new Error('the pool did not fill');
}
// Cycles for SECONDS on each of calls (concurrently); returns [cycles/s, from_pool count, cycles];
// lastClientCpu is this (client) process's CPU per cycle in ms.
let lastClientCpu = 0;
async function cycles(calls) {
	let n = 0, fromPool = 0;
	const cpu0 = process.cpuUsage();
	const start = Date.now();
	await Promise.all(calls.map(async (call) => {
		while (Date.now() - start < SECONDS * 1000) {
			const c = await call('environment_create', {});
			await call('environment_execute', { environment_id: c.environment_id, argv: ['/bin/true'] });
			await call('environment_destroy', { environment_id: c.environment_id });
			n++;
			fromPool += c.from_pool ? 1 : 0;
		}
	}));
	const cpu = process.cpuUsage(cpu0);
	lastClientCpu = n ? (cpu.user + cpu.system) / 1000 / n : 0;
	return [n / ((Date.now() - start) / 1000), fromPool, n];
}

const client = await stdioClient();
const call = caller(client);
const { environment_id: id } = await call('environment_create', {});
const rtt = [];
for (let i = 0; i < N + 20; i++) {
	const t0 = process.hrtime.bigint();
	await call('environment_execute', { environment_id: id, argv: ['/bin/true'] });
	const ms = Number(process.hrtime.bigint() - t0) / 1e6;
	if (i >= 20) rtt.push(ms);
}
await call('environment_destroy', { environment_id: id });

const [cold] = await cycles([call]);
await fillPool(call, POOL);
const [pooled, pooledFrom, pooledN] = await cycles([call]);
const out = { execute_median_ms: median(rtt), execute_p90_ms: p90(rtt), calls: N, seconds: SECONDS, pool: POOL,
	cycles_per_second: cold, pool_cycles_per_second: pooled, pool_from_pool: pooledFrom, pool_cycles: pooledN };
// The same with the entries' writable layer on a tmpfs (a pool set under
// SBX_POOL_LAYER=tmpfs: its configuration says so, docs/warm.md).
await call('pool_set', { source: 'host', size: 0, remove: true });
const tclient = await stdioClient({ ...process.env, SBX_POOL_LAYER: 'tmpfs' });
const tcall = caller(tclient);
await fillPool(tcall, POOL);
const [tpooled, tpooledFrom, tpooledN] = await cycles([tcall]);
Object.assign(out, { tmpfs_pool_cycles_per_second: tpooled, tmpfs_pool_from_pool: tpooledFrom, tmpfs_pool_cycles: tpooledN, tmpfs_pool_client_cpu_ms: lastClientCpu });
if (url) {
	await fillPool(tcall, POOL);
	const clients = await Promise.all(Array.from({ length: HTTP_CLIENTS }, httpClient));
	const [rate, from, n] = await cycles(clients.map(caller));
	Object.assign(out, { tmpfs_http_pool_cycles_per_second: rate, tmpfs_http_from_pool: from, tmpfs_http_cycles: n, tmpfs_http_client_cpu_ms: lastClientCpu });
	await Promise.all(clients.map((c) => c.close()));
	await fillPool(tcall, POOL);
	const nclients = await Promise.all(Array.from({ length: HTTP_CLIENTS }, () => httpClient(true)));
	const [nrate, nfrom, nn] = await cycles(nclients.map(caller));
	Object.assign(out, { tmpfs_nodehttp_pool_cycles_per_second: nrate, tmpfs_nodehttp_from_pool: nfrom, tmpfs_nodehttp_cycles: nn, tmpfs_nodehttp_client_cpu_ms: lastClientCpu });
	await Promise.all(nclients.map((c) => c.close()));
}
await tcall('pool_set', { source: 'host', size: 0, remove: true });
await tclient.close();
if (url) {
	await fillPool(call, POOL);
	const clients = await Promise.all(Array.from({ length: HTTP_CLIENTS }, httpClient));
	const [rate, from, n] = await cycles(clients.map(caller));
	Object.assign(out, { http_clients: HTTP_CLIENTS, http_pool_cycles_per_second: rate, http_from_pool: from, http_cycles: n });
	await Promise.all(clients.map((c) => c.close()));
}
await call('pool_set', { source: 'host', size: 0, remove: true });
// No pool set: the server's own warm set (docs/warm.md), which the first
// seconds of creates start; the second run is the one reported.
const wclient = await stdioClient(process.env, ['mcp']);
const wcall = caller(wclient);
await cycles([wcall]);
const [wrate, wfrom, wn] = await cycles([wcall]);
Object.assign(out, { warm_cycles_per_second: wrate, warm_from_pool: wfrom, warm_cycles: wn });
await wclient.close();
if (url) {
	const clients = await Promise.all(Array.from({ length: HTTP_CLIENTS }, httpClient));
	await cycles(clients.map(caller));
	const [rate, from, n] = await cycles(clients.map(caller));
	Object.assign(out, { http_warm_cycles_per_second: rate, http_warm_from_pool: from, http_warm_cycles: n });
	await Promise.all(clients.map((c) => c.close()));
}
console.log(JSON.stringify(out));
await client.close();
