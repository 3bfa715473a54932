// A later cell `x+1` on a warm context (issue 29: at most 5 ms median round trip through MCP and
// through the E2B API), through four front ends in the same run, in blocks taken in turn so that a
// shared machine's load swings hit all alike (bench/code/run starts it):
//  - the library: code_bench --stdin ID (one sbx_run_code per line, its own time printed);
//  - MCP stdio with the official SDK (tests/mcp's @modelcontextprotocol/sdk: Client.callTool of
//    environment_run_code, the result checked against the tool's output schema as the SDK does);
//  - MCP stdio with a minimal JSON-RPC client (one line written, lines read until its answer): sbx's
//    own cost without the SDK's;
//  - E2B's @e2b/code-interpreter (tests/e2b's, unchanged): sandbox.runCode('x+1') against
//    `sbx serve` (E2B_API_URL, E2B_SANDBOX_URL, E2B_API_KEY), in a sandbox of its own.
// The library and both MCP clients run in environment ID (whose default context ran `x = 1`); each
// `sbx mcp` is its own process on the same store (SBX_ROOT).
// Each front end also runs the cell, in the same rounds, in a second context whose kernel is
// ipykernel as it ships (`python3 -m ipykernel_launcher`: the bridge's launcher, code_python.py,
// removed from the environment before that context starts): the `_plain` figures, what the
// launcher saves.
//   node later.mjs SBX CODE_BENCH ID ROUNDS      prints one JSON object (ms)
import { createRequire } from 'node:module';
import { execFileSync, spawn } from 'node:child_process';
import readline from 'node:readline';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const mcpReq = createRequire(path.join(here, '../../tests/mcp/package.json'));
const { Client } = mcpReq('@modelcontextprotocol/sdk/client/index.js');
const { StdioClientTransport } = mcpReq('@modelcontextprotocol/sdk/client/stdio.js');
const { Sandbox } = createRequire(path.join(here, '../../tests/e2b/package.json'))('@e2b/code-interpreter');
const [sbx, codeBench, id, roundsArg] = process.argv.slice(2);
const rounds = Number(roundsArg || 200);

// A context of environment ENV whose kernel starts without the launcher; it runs `x = 1`.
function plainContext(env) {
	execFileSync(sbx, ['exec', env, '--user', '0', '--', 'rm', '-f', '/tmp/.sbx-code-ipykernel_launcher.py']);
	const ctx = execFileSync(sbx, ['code', env, '--new-context']).toString().trim();
	execFileSync(sbx, ['code', env, '--context', ctx, '--', 'x = 1']);
	return ctx;
}

// A child answering one line per line written.
function lineChild(cmd, args) {
	const p = spawn(cmd, args, { stdio: ['pipe', 'pipe', 'inherit'] });
	const waiting = [];
	const lines = [];
	readline.createInterface({ input: p.stdout }).on('line', (l) => {
		if (waiting.length) waiting.shift()(l);
		else lines.push(l);
	});
	const next = () => (lines.length ? Promise.resolve(lines.shift()) : new Promise((r) => waiting.push(r)));
	return { p, next, write: (s) => p.stdin.write(s) };
}

const lib = lineChild(codeBench, ['--stdin', id]);
async function libCell(ctx = '') {
	lib.write(`${ctx}\n`);
	return Number(await lib.next());
}

const transport = new StdioClientTransport({ command: sbx, args: ['mcp', '--warm', '0'], env: process.env, stderr: 'inherit' });
const client = new Client({ name: 'sbx-bench-code', version: '1' });
await client.connect(transport);
await client.listTools(); // the SDK validates a tool's results against its output schema once listed
const args = (ctx) => ({ environment_id: id, code: 'x+1', ...(ctx ? { context_id: ctx } : {}) });
async function sdkCell(ctx) {
	const t0 = performance.now();
	const r = await client.callTool({ name: 'environment_run_code', arguments: args(ctx) });
	const t = performance.now() - t0;
	if (r.isError || r.structuredContent.results[0]?.text !== '2')
		throw new Error(`MCP SDK: ${JSON.stringify(r.structuredContent)}`);
	return t;
}

const raw = lineChild(sbx, ['mcp', '--warm', '0']);
let rawId = 0;
async function rawCall(method, params) {
	const myId = ++rawId;
	raw.write(JSON.stringify({ jsonrpc: '2.0', id: myId, method, params }) + '\n');
	for (;;) {
		const m = JSON.parse(await raw.next());
		if (m.id === myId) return m;
	}
}
await rawCall('initialize', { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } });
raw.write(JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }) + '\n');
async function rawCell(ctx) {
	const t0 = performance.now();
	const m = await rawCall('tools/call', { name: 'environment_run_code', arguments: args(ctx) });
	const t = performance.now() - t0;
	if (m.error || m.result.structuredContent.results[0]?.text !== '2') throw new Error(`MCP raw: ${JSON.stringify(m)}`);
	return t;
}

const sb = await Sandbox.create('code-interpreter-v1');
await sb.runCode('x = 1');
const plain = { env: plainContext(id), e2b: plainContext(sb.sandboxId) };
const e2bPlain = (await sb.listCodeContexts()).find((c) => c.id === plain.e2b);
async function e2bCell(ctx) {
	const t0 = performance.now();
	const ex = await sb.runCode('x+1', ctx ? { context: e2bPlain } : {});
	const t = performance.now() - t0;
	if (ex.text !== '2') throw new Error(`E2B: x+1 answered ${JSON.stringify(ex.text)}`);
	return t;
}

const fronts = { library: libCell, mcp_sdk: sdkCell, mcp_raw: rawCell, e2b: e2bCell };
for (const [k, f] of Object.entries({ ...fronts })) fronts[`${k}_plain`] = () => f(k === 'e2b' ? plain.e2b : plain.env);
const times = Object.fromEntries(Object.keys(fronts).map((k) => [k, []]));
// In blocks of BLOCK consecutive cells per front end, the blocks in turn: a cell right after another
// front end's overlaps its trailing work (a server thread ending, a connection closing, a GC) on a
// 2-core machine, which a client calling one front end does not see; the first cell of each block,
// untimed, takes that.
const BLOCK = 10;
for (let i = 0; i < Math.ceil(rounds / BLOCK); i++) {
	for (const [k, f] of Object.entries(fronts)) {
		await f();
		for (let j = 0; j < BLOCK && times[k].length < rounds; j++) times[k].push(await f());
	}
}

await sb.kill();
await client.close();
lib.p.stdin.end();
raw.p.stdin.end();
const q = (v, p) => [...v].sort((a, b) => a - b)[Math.round(p * (v.length - 1))];
const out = { rounds };
for (const [k, v] of Object.entries(times)) {
	out[`${k}_ms`] = q(v, 0.5);
	out[`${k}_p99_ms`] = q(v, 0.99);
}
console.log(JSON.stringify(out));
