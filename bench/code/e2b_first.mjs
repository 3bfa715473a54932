// The first cell through E2B's official @e2b/code-interpreter SDK (tests/e2b's, unchanged) against
// one `sbx serve --warm 0` (bench/code/run starts it): Sandbox.create() (template
// code-interpreter-v1) + runCode('1+1'), timed together, then kill() (untimed).
//   node e2b_first.mjs SBX COLD_ROUNDS POOL_ROUNDS
// First COLD_ROUNDS creates without a pool (the first runCode starts the bridge and its kernel);
// then a code pool of the source those creates name (E2B's base snapshot, e2b-base-*, as root; host
// rootless), set on the server's store (SBX_ROOT) with `sbx pool set SRC --size 2 --code`, and
// POOL_ROUNDS creates, each once that pool is full. A server's own warm set would keep such a pool
// under steady demand, but a benchmark that waits for refills between rounds is no steady demand
// (its pool would be removed as the rate decays). A round counts as pooled when the pool had a ready
// entry when it began. Prints one JSON object.
import { createRequire } from 'node:module';
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const { Sandbox } = createRequire(path.join(here, '../../tests/e2b/package.json'))('@e2b/code-interpreter');
const [sbx, coldArg, poolArg] = process.argv.slice(2);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function codePool() {
	const j = JSON.parse(execFileSync(sbx, ['pool', 'ls', '--json']));
	const p = j.pools.filter((q) => q.code);
	return { size: p.reduce((a, q) => a + q.size, 0), ready: p.reduce((a, q) => a + q.ready, 0) };
}

async function round() {
	const t0 = performance.now();
	const sb = await Sandbox.create('code-interpreter-v1');
	const ex = await sb.runCode('1+1');
	const t = performance.now() - t0;
	if (ex.text !== '2') throw new Error(`1+1 answered ${JSON.stringify(ex.text)}`);
	await sb.kill();
	return t;
}

function q(v, p) {
	const s = [...v].sort((a, b) => a - b);
	return s[Math.round(p * (s.length - 1))];
}

const cold = [];
for (let i = 0; i < Number(coldArg); i++) {
	if (codePool().size > 0) throw new Error('a code pool exists before the cold rounds');
	cold.push(await round());
}
const snaps = JSON.parse(execFileSync(sbx, ['snapshots', '--json'])).snapshots || [];
const base = snaps.map((x) => JSON.stringify(x).match(/"(e2b-base-[A-Za-z0-9._-]+)"/)).find((m) => m);
const source = base ? base[1] : 'host';
execFileSync(sbx, ['pool', 'set', source, '--size', '2', '--code']);
const pooled = [];
let fromPool = 0;
for (let i = 0; i < Number(poolArg); i++) {
	let p = codePool();
	for (let w = 0; w < 1200 && (p.size === 0 || p.ready < p.size); w++) {
		await sleep(100);
		p = codePool();
	}
	fromPool += p.ready > 0 ? 1 : 0;
	pooled.push(await round());
}
execFileSync(sbx, ['pool', 'rm', source, '--code']);
console.log(JSON.stringify({
	source,
	cold_rounds: cold.length, cold_median_ms: q(cold, 0.5), cold_max_ms: q(cold, 1),
	pool_rounds: pooled.length, pool_from_pool: fromPool, pool_median_ms: q(pooled, 0.5),
	pool_p90_ms: q(pooled, 0.9), pool_max_ms: q(pooled, 1),
}));
