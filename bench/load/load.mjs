// Load driver for bench/load/run: N concurrent MCP clients (the official
// TypeScript SDK), over Streamable HTTP (`sbx serve`, one session per client)
// or over stdio (one `sbx mcp` per client), each cycling
//   environment_create -> environment_write_file -> environment_execute (cat it)
//   -> environment_snapshot -> environment_write_file (a change)
//   -> environment_restore -> environment_read_file (the original is back)
//   -> environment_destroy
// until SECONDS have passed (cycles under way then are finished and counted).
//
// Usage: node load.mjs --transport http|stdio --clients N --seconds S
//                      [--url URL --token-file F] [--sbx BIN] [--bytes B] [--ids FILE]
// Prints one JSON object: cycles, cycles_per_second, latency per tool (p50,
// p90, p99, max in ms), errors by kind (tool/code) with a sample message each,
// data mismatches by kind. With --ids, every environment id created is
// appended to FILE (one a line) for the caller's leak checks.
import { createRequire } from 'node:module';
import { appendFileSync, readFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const require = createRequire(path.join(here, '../../tests/mcp/package.json'));
const { Client } = require('@modelcontextprotocol/sdk/client/index.js');
const { StdioClientTransport } = require('@modelcontextprotocol/sdk/client/stdio.js');
const { StreamableHTTPClientTransport } = require('@modelcontextprotocol/sdk/client/streamableHttp.js');

const opt = { transport: 'http', clients: 4, seconds: 10, bytes: 1024, sbx: 'sbx' };
const argv = process.argv.slice(2);
for (let i = 0; i < argv.length; i += 2) {
	const k = argv[i].replace(/^--/, '').replace(/-/g, '_');
	if (!(k in opt) && !['url', 'token_file', 'ids'].includes(k)) {
		console.error(`load.mjs: unknown option ${argv[i]}`);
		process.exit(2);
	}
	opt[k] = argv[i + 1];
}
const CLIENTS = Number(opt.clients);
const SECONDS = Number(opt.seconds);
const BYTES = Number(opt.bytes);
const TIMEOUT_MS = 120000; // per call: a stuck call is an error, not a hang
if (opt.transport === 'http' && !opt.url) {
	console.error('load.mjs: --transport http needs --url');
	process.exit(2);
}
const token = opt.token_file ? readFileSync(opt.token_file, 'utf8').trim() : null;

const TOOLS = [
	'environment_create',
	'environment_write_file',
	'environment_execute',
	'environment_snapshot',
	'environment_restore',
	'environment_read_file',
	'environment_destroy',
];
const lat = Object.fromEntries([...TOOLS, 'cycle', 'connect'].map((t) => [t, []]));
const errors = {}; // kind -> count
const samples = {}; // kind -> first message
const mismatches = {};
const mismatchSamples = {};
let cycles = 0;
let reconnects = 0;

function countError(kind, msg) {
	errors[kind] = (errors[kind] || 0) + 1;
	if (!(kind in samples)) samples[kind] = String(msg).slice(0, 400);
}
function countMismatch(kind, want, got) {
	mismatches[kind] = (mismatches[kind] || 0) + 1;
	if (!(kind in mismatchSamples))
		mismatchSamples[kind] = { want: String(want).slice(0, 120), got: String(got).slice(0, 120) };
}

// A call that failed: sbx's own error (isError + structuredContent.error.code),
// a JSON-RPC error (McpError.code), or the transport (closed, reset, timeout).
class CallError extends Error {
	constructor(kind, msg) {
		super(msg);
		this.kind = kind;
	}
}

async function connect() {
	const client = new Client({ name: `sbx-load-${opt.transport}`, version: '1' });
	let transport;
	if (opt.transport === 'http') {
		const headers = token ? { Authorization: `Bearer ${token}` } : {};
		transport = new StreamableHTTPClientTransport(new URL(opt.url), { requestInit: { headers } });
	} else {
		transport = new StdioClientTransport({ command: opt.sbx, args: ['mcp'], env: process.env, stderr: 'inherit' });
	}
	const t0 = process.hrtime.bigint();
	await client.connect(transport);
	lat.connect.push(Number(process.hrtime.bigint() - t0) / 1e6);
	return client;
}

async function call(client, tool, args) {
	const t0 = process.hrtime.bigint();
	let r;
	try {
		r = await client.callTool({ name: tool, arguments: args }, undefined, { timeout: TIMEOUT_MS });
	} catch (e) {
		const kind = typeof e.code === 'number' ? `jsonrpc:${e.code}` : `transport:${e.name || 'Error'}`;
		throw new CallError(`${tool}/${kind}`, e.message);
	}
	lat[tool].push(Number(process.hrtime.bigint() - t0) / 1e6);
	if (r.isError) {
		const err = r.structuredContent?.error ?? {};
		throw new CallError(`${tool}/${err.code ?? 'unknown'}`, err.message ?? JSON.stringify(r.content));
	}
	return r.structuredContent;
}

function content(c, k, tag) {
	// Unique per client, cycle and step, so a mixed-up environment shows.
	const head = `${tag} ${opt.transport} client ${c} cycle ${k} `;
	const body = randomBytes(Math.max(0, Math.ceil((BYTES - head.length) / 2))).toString('hex');
	return (head + body).slice(0, Math.max(BYTES, head.length)) + '\n';
}

async function cycle(client, c, k) {
	const t0 = process.hrtime.bigint();
	const { environment_id: id } = await call(client, 'environment_create', {});
	if (opt.ids) appendFileSync(opt.ids, `${id}\n`);
	let destroyed = false;
	try {
		const orig = content(c, k, 'original');
		const w = await call(client, 'environment_write_file', { environment_id: id, path: '/root/load.txt', content: orig });
		if (w.bytes_written !== Buffer.byteLength(orig)) countMismatch('write_bytes', Buffer.byteLength(orig), w.bytes_written);
		const x = await call(client, 'environment_execute', { environment_id: id, argv: ['cat', '/root/load.txt'] });
		if (x.exit_code !== 0 || x.stdout !== orig) countMismatch('execute_cat', orig, x.exit_code !== 0 ? `exit ${x.exit_code}: ${x.stderr}` : x.stdout);
		const s = await call(client, 'environment_snapshot', { environment_id: id });
		if (!/^sha256:[0-9a-f]{64}$/.test(s.snapshot_id ?? '')) countMismatch('snapshot_id', 'sha256:<hex>', s.snapshot_id);
		const changed = content(c, k, 'changed');
		const w2 = await call(client, 'environment_write_file', { environment_id: id, path: '/root/load.txt', content: changed });
		if (w2.bytes_written !== Buffer.byteLength(changed)) countMismatch('write_bytes', Buffer.byteLength(changed), w2.bytes_written);
		await call(client, 'environment_restore', { environment_id: id, snapshot_id: s.snapshot_id });
		const r = await call(client, 'environment_read_file', { environment_id: id, path: '/root/load.txt' });
		if (r.content !== orig) countMismatch('read_after_restore', orig, r.content);
		await call(client, 'environment_destroy', { environment_id: id });
		destroyed = true;
	} finally {
		if (!destroyed) await client.callTool({ name: 'environment_destroy', arguments: { environment_id: id } }).catch(() => {});
	}
	lat.cycle.push(Number(process.hrtime.bigint() - t0) / 1e6);
	cycles++;
}

const start = Date.now();
const deadline = start + SECONDS * 1000;
async function worker(c) {
	let client = null;
	for (let k = 0; Date.now() < deadline; k++) {
		try {
			if (!client) client = await connect();
		} catch (e) {
			countError(`connect/transport:${e.name || 'Error'}`, e.message);
			await new Promise((res) => setTimeout(res, 200));
			continue;
		}
		try {
			await cycle(client, c, k);
		} catch (e) {
			if (!(e instanceof CallError)) throw e;
			countError(e.kind, e.message);
			// A broken transport: start a new session (a new server over stdio).
			if (e.kind.includes('/transport:') || e.kind.includes('/jsonrpc:-32000') || e.kind.includes('/jsonrpc:-32001')) {
				await client.close().catch(() => {});
				client = null;
				reconnects++;
			}
		}
	}
	if (client) await client.close().catch(() => {});
}

await Promise.all(Array.from({ length: CLIENTS }, (_, c) => worker(c)));
const elapsed = (Date.now() - start) / 1000;

const pct = (a, p) => {
	if (!a.length) return null;
	const s = a.slice().sort((x, y) => x - y);
	return Math.round(s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)] * 100) / 100;
};
const latency = {};
for (const [t, a] of Object.entries(lat))
	latency[t] = { n: a.length, p50: pct(a, 50), p90: pct(a, 90), p99: pct(a, 99), max: pct(a, 100) };
const sum = (o) => Object.values(o).reduce((x, y) => x + y, 0);
console.log(
	JSON.stringify({
		transport: opt.transport,
		clients: CLIENTS,
		seconds: SECONDS,
		bytes: BYTES,
		elapsed_s: elapsed,
		cycles,
		cycles_per_second: Math.round((cycles / elapsed) * 100) / 100,
		latency,
		errors_total: sum(errors),
		errors,
		error_samples: samples,
		mismatches_total: sum(mismatches),
		mismatches,
		mismatch_samples: mismatchSamples,
		reconnects,
	}),
);
process.exit(0);
