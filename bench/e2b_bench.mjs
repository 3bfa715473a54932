// The E2B front door measured with E2B's official SDK (tests/e2b's `e2b`, unchanged), against the
// MCP front door of the same `sbx serve` (tests/mcp's SDK) in the same run, so that ratios hold:
//  - Sandbox.create() -> commands.run('true') -> kill() cycles per second, 1 client and CLIENTS
//    concurrent clients (async loops in this process), from the server's own warm set (each run
//    after a warm-up run that makes the server's demand hot: docs/warm.md)
//  - peers: MCP create -> execute -> destroy over one stdio session (`sbx mcp`, its own warm set)
//    and over CLIENTS concurrent HTTP sessions of the same `sbx serve`
//  - commands.run('true') on a live sandbox, median and p90 over N calls back to back, and over N/3
//    calls BENCH_E2B_PACE_MS (50) apart, as an agent calls; peers: MCP
//    environment_execute over stdio of /bin/true and of what the SDK runs, /bin/bash -l -c true
//  - host memory per idle sandbox, PSS of supervisor + init (/proc/PID/smaps_rollup, as bench/run):
//    MEM E2B sandboxes and MEM `sbx create` environments, idle side by side
// The E2B SDK reads E2B_API_URL, E2B_SANDBOX_URL and E2B_API_KEY (bench/e2b sets them).
// Usage: node bench/e2b_bench.mjs SBX_BIN N SECONDS CLIENTS MEM MCP_URL TOKEN_FILE
// Prints one JSON object.
import { createRequire } from 'node:module';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const { Sandbox } = createRequire(path.join(here, '../tests/e2b/package.json'))('e2b');
const mcpRequire = createRequire(path.join(here, '../tests/mcp/package.json'));
const { Client } = mcpRequire('@modelcontextprotocol/sdk/client/index.js');
const { StdioClientTransport } = mcpRequire('@modelcontextprotocol/sdk/client/stdio.js');
const { StreamableHTTPClientTransport } = mcpRequire('@modelcontextprotocol/sdk/client/streamableHttp.js');

const [sbx, nArg, secArg, clientsArg, memArg, mcpUrl, tokenFile] = process.argv.slice(2);
const N = Number(nArg || 300);
const SECONDS = Number(secArg || 10);
const PACE_MS = Number(process.env.BENCH_E2B_PACE_MS || 50);
const CLIENTS = Number(clientsArg || 8);
const MEM = Number(memArg || 8);
const WARMUP = Math.min(SECONDS, 3);
const q = (a, p) => a.slice().sort((x, y) => x - y)[Math.min(a.length - 1, Math.floor(a.length * p))];
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// Runs cycle() in `loops` concurrent loops for `secs`; [cycles/s, cycles, client CPU ms per cycle].
async function rate(loops, secs, cycle) {
	let n = 0;
	const cpu0 = process.cpuUsage();
	const start = Date.now();
	await Promise.all(Array.from({ length: loops }, async (_, i) => {
		while (Date.now() - start < secs * 1000) {
			await cycle(i);
			n++;
		}
	}));
	const cpu = process.cpuUsage(cpu0);
	return [n / ((Date.now() - start) / 1000), n, n ? (cpu.user + cpu.system) / 1000 / n : 0];
}
// gap: ms to wait before each call, untimed (an agent's pace between commands).
async function timed(n, call, gap = 0) {
	const t = [];
	for (let i = 0; i < n + 20; i++) {
		if (gap) await new Promise((r) => setTimeout(r, gap));
		const t0 = process.hrtime.bigint();
		await call();
		if (i >= 20) t.push(Number(process.hrtime.bigint() - t0) / 1e6);
	}
	return [q(t, 0.5), q(t, 0.9)];
}

function find(o, k) {
	if (o && typeof o === 'object') {
		if (k in o) return o[k];
		for (const v of Object.values(o)) {
			const r = find(v, k);
			if (r !== undefined) return r;
		}
	}
	return undefined;
}
const inspect = (id) => JSON.parse(execFileSync(sbx, ['inspect', '--json', id], { encoding: 'utf8' }));

const out = { calls: N, seconds: SECONDS, clients: CLIENTS, mem_sandboxes: MEM };

// ---- E2B: cycles, then the round trip
// Each step's time in ms, kept for the 1-client run (where the steps do not queue on each other).
let phases = null;
const ms = (t0) => Number(process.hrtime.bigint() - t0) / 1e6;
const e2bCycle = async () => {
	const t0 = process.hrtime.bigint();
	const s = await Sandbox.create();
	const t1 = process.hrtime.bigint();
	const r = await s.commands.run('true');
	if (r.exitCode !== 0) throw new Error(`commands.run('true'): exit ${r.exitCode}`);
	const t2 = process.hrtime.bigint();
	await s.kill();
	if (phases) {
		phases.create.push(ms(t0) - ms(t1));
		phases.cmd.push(ms(t1) - ms(t2));
		phases.kill.push(ms(t2));
	}
};
// Whether the warm set serves the creates: PROBE sandboxes made right after a run (its demand still
// hot), each one's from_pool read from its state (SBX_ROOT/envs/ID/state.json, what
// sbx_env_from_pool reads; `sbx inspect` does not show it; reading during the run would slow it).
const PROBE = 4;
const fromPool = (id) =>
	JSON.parse(fs.readFileSync(path.join(process.env.SBX_ROOT, 'envs', id, 'state.json'), 'utf8')).from_pool === true;
async function probe() {
	const boxes = await Promise.all(Array.from({ length: PROBE }, () => Sandbox.create()));
	const n = boxes.filter((s) => fromPool(s.sandboxId)).length;
	await Promise.all(boxes.map((s) => s.kill()));
	return n;
}
await rate(1, WARMUP, e2bCycle);
phases = { create: [], cmd: [], kill: [] };
[out.e2b_cycles_per_second, out.e2b_cycles, out.e2b_client_cpu_ms] = await rate(1, SECONDS, e2bCycle);
for (const k of Object.keys(phases)) out[`e2b_${k}_median_ms`] = q(phases[k], 0.5);
phases = null;
out.e2b_probe_from_pool = await probe();
await rate(CLIENTS, WARMUP, e2bCycle);
[out.e2b_conc_cycles_per_second, out.e2b_conc_cycles, out.e2b_conc_client_cpu_ms] = await rate(CLIENTS, SECONDS, e2bCycle);
out.e2b_conc_probe_from_pool = await probe();
out.probe = PROBE;
{
	const s = await Sandbox.create();
	[out.e2b_run_median_ms, out.e2b_run_p90_ms] = await timed(N, () => s.commands.run('true'));
	// The same at an agent's pace (PACE_MS between calls): what the spare login shell is for
	// (docs/e2b.md "Spare shells"); back to back, each call waits for the previous one's.
	out.pace_ms = PACE_MS;
	[out.e2b_run_paced_median_ms, out.e2b_run_paced_p90_ms] = await timed(Math.ceil(N / 3), () => s.commands.run('true'), PACE_MS);
	await s.kill();
}

// ---- MCP, the same server's work through the other front door
const caller = (client) => async (name, args) => {
	const r = await client.callTool({ name, arguments: args });
	if (r.isError) throw new Error(`${name}: ${JSON.stringify(r.structuredContent)}`);
	return r.structuredContent;
};
const mcpCycle = (call) => async () => {
	const c = await call('environment_create', {});
	await call('environment_execute', { environment_id: c.environment_id, argv: ['/bin/true'] });
	await call('environment_destroy', { environment_id: c.environment_id });
};
{
	const client = new Client({ name: 'sbx-e2b-bench', version: '1' });
	await client.connect(new StdioClientTransport({ command: sbx, args: ['mcp'], env: process.env, stderr: 'inherit' }));
	const call = caller(client);
	await rate(1, WARMUP, mcpCycle(call));
	[out.mcp_cycles_per_second, out.mcp_cycles, out.mcp_client_cpu_ms] = await rate(1, SECONDS, mcpCycle(call));
	const { environment_id: id } = await call('environment_create', {});
	[out.mcp_execute_median_ms, out.mcp_execute_p90_ms] = await timed(N, () =>
		call('environment_execute', { environment_id: id, argv: ['/bin/true'] }));
	// What commands.run('true') runs: the SDK starts /bin/bash -l -c CMD (a login shell).
	[out.mcp_bash_median_ms, out.mcp_bash_p90_ms] = await timed(N, () =>
		call('environment_execute', { environment_id: id, argv: ['/bin/bash', '-l', '-c', 'true'] }));
	await call('environment_destroy', { environment_id: id });
	await client.close();
}
{
	const token = fs.readFileSync(tokenFile, 'utf8').trim();
	const clients = await Promise.all(Array.from({ length: CLIENTS }, async () => {
		const c = new Client({ name: 'sbx-e2b-bench-http', version: '1' });
		await c.connect(new StreamableHTTPClientTransport(new URL(mcpUrl), {
			requestInit: { headers: { Authorization: `Bearer ${token}` } },
		}));
		return c;
	}));
	const cycles = clients.map((c) => mcpCycle(caller(c)));
	await rate(CLIENTS, WARMUP, (i) => cycles[i]());
	[out.mcp_http_cycles_per_second, out.mcp_http_cycles, out.mcp_http_client_cpu_ms] =
		await rate(CLIENTS, SECONDS, (i) => cycles[i]());
	await Promise.all(clients.map((c) => c.close()));
}

// ---- memory per idle sandbox: E2B's and `sbx create`'s, idle side by side
function pids(id) {
	const d = inspect(id);
	return [find(d, 'supervisor_pid'), find(d, 'init_pid')];
}
function pssKiB(pid) {
	const m = fs.readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8').match(/^Pss:\s+(\d+) kB/m);
	if (!m) throw new Error(`no Pss in /proc/${pid}/smaps_rollup`);
	return Number(m[1]);
}
const e2bBoxes = [], plain = [];
for (let i = 0; i < MEM; i++) {
	e2bBoxes.push(await Sandbox.create({ timeoutMs: 600_000 }));
	plain.push(execFileSync(sbx, ['create'], { encoding: 'utf8' }).trim());
}
await sleep(2000); // let them settle into idle
const perSandbox = (ids) => {
	let sup = 0, init = 0;
	for (const id of ids) {
		const [s, i] = pids(id);
		if (!s || !i) throw new Error(`${id}: no supervisor_pid or init_pid in sbx inspect`);
		sup += pssKiB(s);
		init += pssKiB(i);
	}
	return [sup / 1024 / ids.length, init / 1024 / ids.length];
};
[out.e2b_sup_pss_mib, out.e2b_init_pss_mib] = perSandbox(e2bBoxes.map((s) => s.sandboxId));
[out.plain_sup_pss_mib, out.plain_init_pss_mib] = perSandbox(plain);
await Promise.all(e2bBoxes.map((s) => s.kill()));
for (const id of plain) execFileSync(sbx, ['rm', id]);

console.log(JSON.stringify(out));
