// E2B's official SDK (npm e2b, unchanged) against `sbx serve`: the sandbox
// lifecycle through the control plane, and the data plane's /health.
// Usage: node lifecycle.mjs CASE, with E2B_API_URL, E2B_SANDBOX_URL and
// E2B_API_KEY pointing at the server and SBX_BIN the sbx binary (its store
// in SBX_ROOT/SBX_RUN, as the server's). Exits non-zero with a message on
// the first failed check. Every case kills what it creates.
import { execFileSync } from 'node:child_process';
import { AuthenticationError, Sandbox, SandboxNotFoundError } from 'e2b';

const [name] = process.argv.slice(2);
const url = process.env.E2B_SANDBOX_URL;
const created = [];

function check(cond, msg, extra) {
	if (!cond) {
		throw new Error(`check failed: ${msg}${extra === undefined ? '' : `: ${JSON.stringify(extra)}`}`);
	}
}

function sbxLs() {
	return execFileSync(process.env.SBX_BIN, ['ls'], { encoding: 'utf8' });
}

async function create(opts) {
	const s = await Sandbox.create(opts);
	created.push(s.sandboxId);
	return s;
}

// A raw data-plane request, as the SDK's envd client makes one.
async function dataPlane(path, id, token) {
	const headers = { 'E2b-Sandbox-Id': id, 'E2b-Sandbox-Port': '49983' };
	if (token) headers['X-Access-Token'] = token;
	const r = await fetch(`${url}${path}`, { headers });
	return { status: r.status, body: await r.text() };
}

async function allListed(query) {
	const out = [];
	const p = Sandbox.list({ query, limit: 2 });
	while (p.hasNext) out.push(...(await p.nextItems()));
	return out;
}

const cases = {
	async lifecycle() {
		const tag = `t${process.pid}`;
		const s = await create({ metadata: { suite: tag, 'with space': 'a b&c=d' }, timeoutMs: 600_000 });
		check(/^[a-z0-9]+$/.test(s.sandboxId), 'sandbox id matches ^[a-z0-9]+$', s.sandboxId);
		check(sbxLs().includes(s.sandboxId), 'sbx ls shows the sandbox', sbxLs());
		check(await s.isRunning(), 'isRunning() after create');

		const info = await s.getInfo();
		check(info.sandboxId === s.sandboxId, 'getInfo().sandboxId', info);
		check(info.templateId === 'base', 'getInfo().templateId', info);
		check(info.state === 'running', 'getInfo().state', info);
		check(info.metadata.suite === tag && info.metadata['with space'] === 'a b&c=d', 'getInfo().metadata', info);
		check(info.cpuCount >= 1 && info.memoryMB > 0, 'getInfo() sizes', info);
		check(info.endAt - info.startedAt === 600_000, 'endAt = startedAt + timeout', info);
		check(info.envdVersion && !(info.startedAt > new Date()), 'getInfo() times and envdVersion', info);

		// list: found by its metadata (also a value that needs escaping), not by another's
		const other = await create({ metadata: { suite: `${tag}-other` } });
		const mine = await allListed({ metadata: { suite: tag } });
		check(mine.length === 1 && mine[0].sandboxId === s.sandboxId, 'list by metadata', mine);
		const escaped = await allListed({ metadata: { 'with space': 'a b&c=d' } });
		check(escaped.length === 1 && escaped[0].sandboxId === s.sandboxId, 'list by escaped metadata', escaped);
		const all = await allListed({ state: ['running'] });
		check(all.some((x) => x.sandboxId === s.sandboxId) && all.some((x) => x.sandboxId === other.sandboxId),
			'list (paged by 2) has both', all);

		// setTimeout: a new deadline, counted from now
		const before = Date.now();
		await s.setTimeout(900_000);
		const end = (await s.getInfo()).endAt.getTime();
		check(end >= before + 900_000 - 1000 && end <= Date.now() + 900_000 + 1000, 'setTimeout moved endAt', end);

		// pause, pause again (409 -> false), connect resumes
		check((await s.pause()) === true, 'pause() -> true');
		check(!(await s.isRunning()), 'isRunning() false when paused');
		check((await s.getInfo()).state === 'paused', 'getInfo().state paused');
		check((await s.pause()) === false, 'pause() again -> false');
		const paused = await allListed({ state: ['paused'], metadata: { suite: tag } });
		check(paused.length === 1, 'list state=paused', paused);
		const back = await Sandbox.connect(s.sandboxId);
		check(back.sandboxId === s.sandboxId, 'connect() same id');
		check(await back.isRunning(), 'isRunning() after connect');
		check((await back.getInfo()).state === 'running', 'running after connect');
		await Sandbox.connect(s.sandboxId); // a running one: 200, nothing changes
		check(await back.isRunning(), 'connect() to a running sandbox');

		// kill
		check((await s.kill()) === true, 'kill() -> true');
		check((await Sandbox.kill(s.sandboxId)) === false, 'kill() again -> false');
		check(!(await s.isRunning()), 'isRunning() false after kill');
		check(!sbxLs().includes(s.sandboxId), 'sbx ls no longer shows it');
		let threw = null;
		try {
			await Sandbox.getInfo(s.sandboxId);
		} catch (e) {
			threw = e;
		}
		check(threw instanceof SandboxNotFoundError, 'getInfo() of a killed sandbox', String(threw));
		check((await Sandbox.kill(other.sandboxId)) === true, 'Sandbox.kill(id) -> true');
	},

	async auth() {
		const a = await create();
		const b = await create();
		let threw = null;
		try {
			await Sandbox.list({ apiKey: 'e2b_0123456789abcdef' }).nextItems();
		} catch (e) {
			threw = e;
		}
		check(threw instanceof AuthenticationError, 'a wrong API key -> AuthenticationError', String(threw));
		threw = null;
		try {
			await Sandbox.create({ apiKey: 'e2b_00' });
		} catch (e) {
			threw = e;
		}
		check(threw instanceof AuthenticationError, 'create with a wrong key', String(threw));
		// what sbx does not give is refused, not ignored: network, an unknown template
		for (const [what, fn] of [
			['allowInternetAccess', () => Sandbox.create({ allowInternetAccess: true })],
			['an unknown template', () => Sandbox.create('no-such-template')],
			['a host path as template', () => Sandbox.create('dir:/etc')],
		]) {
			threw = null;
			try {
				created.push((await fn()).sandboxId);
			} catch (e) {
				threw = e;
			}
			check(threw !== null, `create with ${what} is refused`);
		}

		// the data plane: a sandbox's token opens only that sandbox
		const other = await dataPlane('/files?path=/etc/hostname', b.sandboxId, a.envdAccessToken);
		check(other.status === 401, "another sandbox's token is refused", other);
		const none = await dataPlane('/files?path=/etc/hostname', b.sandboxId, null);
		check(none.status === 401, 'no token is refused', none);
		const own = await dataPlane('/files?path=/etc/hostname', b.sandboxId, b.envdAccessToken);
		check(own.status === 200 && own.body.length > 0, 'own token reads the file', own);
		const health = await dataPlane('/health', b.sandboxId, null);
		check(health.status === 204, '/health needs no token', health);
		const unknown = await dataPlane('/health', 'nosuchsandbox0', null);
		check(unknown.status === 502 && JSON.parse(unknown.body).sandboxId === 'nosuchsandbox0', 'unknown -> 502', unknown);
		check(a.envdAccessToken && a.envdAccessToken !== b.envdAccessToken, 'tokens differ per sandbox');
		await a.kill();
		await b.kill();
	},

	async timeout() {
		const s = await create({ timeoutMs: 2000 });
		check(await s.isRunning(), 'running before its timeout');
		const t0 = Date.now();
		while (await s.isRunning()) {
			check(Date.now() - t0 < 20_000, 'gone within 20 s of a 2 s timeout');
			await new Promise((r) => setTimeout(r, 250));
		}
		check(Date.now() - t0 >= 1000, 'not gone before its timeout');
		check((await Sandbox.kill(s.sandboxId)) === false, 'the timed-out sandbox is gone (kill -> false)');
		check(!sbxLs().includes(s.sandboxId), 'sbx ls no longer shows it');
		// autoPause: paused at the deadline, not removed
		const p = await create({ timeoutMs: 2000, lifecycle: { onTimeout: 'pause' } });
		const t1 = Date.now();
		while (await p.isRunning()) {
			check(Date.now() - t1 < 20_000, 'paused within 20 s of a 2 s timeout');
			await new Promise((r) => setTimeout(r, 250));
		}
		check((await p.getInfo()).state === 'paused', 'autoPause: paused at the deadline');
		await p.kill();
	},

	async many() {
		const n = 4;
		const all = await Promise.all(Array.from({ length: n }, (_, i) => create({ metadata: { i: String(i) } })));
		check(new Set(all.map((s) => s.sandboxId)).size === n, 'distinct ids');
		const running = await Promise.all(all.map((s) => s.isRunning()));
		check(running.every((x) => x), 'all running', running);
		for (const [i, s] of all.entries()) {
			check((await s.getInfo()).metadata.i === String(i), `sandbox ${i}'s own metadata`);
		}
		const killed = await Promise.all(all.map((s) => Sandbox.kill(s.sandboxId)));
		check(killed.every((x) => x === true), 'all killed', killed);
	},
};

const fn = cases[name];
if (!fn) {
	console.error(`unknown case '${name}'`);
	process.exit(2);
}
try {
	await fn();
} catch (e) {
	console.error(`${name}: ${e.stack || e}`);
	for (const id of created) await Sandbox.kill(id).catch(() => {});
	process.exit(1);
}
