// E2B's official SDK (npm e2b, unchanged) against `sbx serve`: getMetrics,
// snapshots (createSnapshot, Sandbox.create from one, listSnapshots,
// deleteSnapshot) and Sandbox.fork, and raw requests that try what the SDK
// would not send.
// Usage: node snapshots.mjs CASE, with E2B_API_URL, E2B_SANDBOX_URL and
// E2B_API_KEY pointing at the server. Exits non-zero with a message on the
// first failed check. Every case kills what it creates.
import { AuthenticationError, Sandbox, SandboxNotFoundError } from 'e2b';

const [name] = process.argv.slice(2);
const api = process.env.E2B_API_URL;
const key = process.env.E2B_API_KEY;
const created = [];
const snaps = [];

function check(cond, msg, extra) {
	if (!cond) {
		throw new Error(`check failed: ${msg}${extra === undefined ? '' : `: ${JSON.stringify(extra)}`}`);
	}
}

async function create(template, opts) {
	const s = template === undefined ? await Sandbox.create(opts) : await Sandbox.create(template, opts);
	created.push(s.sandboxId);
	return s;
}

async function snapshot(s, opts) {
	const info = await s.createSnapshot(opts);
	snaps.push(info.snapshotId);
	return info;
}

async function throws(fn) {
	try {
		await fn();
	} catch (e) {
		return e;
	}
	return null;
}

// A raw control-plane request (what the SDK would not send).
async function raw(method, path, body, apiKey = key) {
	const headers = { 'Content-Type': 'application/json' };
	if (apiKey) headers['X-API-Key'] = apiKey;
	const r = await fetch(`${api}${path}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
	const text = await r.text();
	let json = null;
	try {
		json = JSON.parse(text);
	} catch {}
	return { status: r.status, json, text };
}

async function allSnapshots(opts) {
	const out = [];
	const p = Sandbox.listSnapshots(opts);
	while (p.hasNext) out.push(...(await p.nextItems()));
	return out;
}

const cases = {
	async metrics() {
		const s = await create();
		await s.commands.run('head -c 20000000 /dev/zero > /tmp/blob; sha256sum /tmp/blob');
		const m = await s.getMetrics();
		check(Array.isArray(m) && m.length === 1, 'one current sample', m);
		const x = m[0];
		check(x.timestamp instanceof Date && Math.abs(x.timestamp - Date.now()) < 60_000, 'timestamp is now', x);
		check(Number.isInteger(x.cpuCount) && x.cpuCount >= 1, 'cpuCount', x);
		check(x.cpuUsedPct >= 0 && x.cpuUsedPct <= 100, 'cpuUsedPct in 0..100', x);
		check(x.memUsed > 0 && x.memTotal >= x.memUsed, 'memUsed > 0, <= memTotal', x);
		check(x.memCache >= 0 && x.diskUsed >= 0 && x.diskTotal > 0 && x.diskTotal >= x.diskUsed, 'disk figures', x);
		// the raw body: timestampUnix and an RFC 3339 timestamp
		const r = await raw('GET', `/sandboxes/${s.sandboxId}/metrics`);
		check(r.status === 200 && typeof r.json[0].timestampUnix === 'number', 'timestampUnix', r);
		check(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/.test(r.json[0].timestamp), 'RFC 3339 timestamp', r.json);
		// a window in the past has no sample; a bad one is 400
		const past = await s.getMetrics({ start: new Date(1_000_000), end: new Date(2_000_000) });
		check(past.length === 0, 'a window in the past: no sample', past);
		const bad = await raw('GET', `/sandboxes/${s.sandboxId}/metrics?start=yesterday`);
		check(bad.status === 400, 'start=yesterday -> 400', bad);
		// unknown sandbox: 404 in E2B's format -> SandboxNotFoundError
		const e = await throws(() => Sandbox.getMetrics('nosuchsandbox0'));
		check(e instanceof SandboxNotFoundError, 'unknown sandbox -> SandboxNotFoundError', String(e));
		const nf = await raw('GET', '/sandboxes/nosuchsandbox0/metrics');
		check(nf.status === 404 && nf.json.code === 404 && typeof nf.json.message === 'string', '404 body', nf);
		await s.kill();
	},

	async snapshot() {
		const tag = `t${process.pid}`;
		const s = await create(undefined, { metadata: { suite: tag } });
		await s.files.write('/home/user/state.txt', 'before');
		const info = await snapshot(s, { name: `${tag}-snap` });
		check(/^sha256:[0-9a-f]{64}$/.test(info.snapshotId), 'snapshotId is a digest', info);
		check(info.names.length === 1 && info.names[0] === `${tag}-snap`, 'names', info);
		await s.files.write('/home/user/state.txt', 'after');

		// create from it, by id and by name: the file as it was, independent of the parent
		const c = await create(info.snapshotId);
		check((await c.files.read('/home/user/state.txt')) === 'before', 'the snapshot has the file');
		const byName = await create(`${tag}-snap`);
		check((await byName.files.read('/home/user/state.txt')) === 'before', 'create by name');
		await c.files.write('/home/user/state.txt', 'child');
		check((await s.files.read('/home/user/state.txt')) === 'after', 'the parent is independent');
		check((await byName.files.read('/home/user/state.txt')) === 'before', 'siblings are independent');
		check(c.envdAccessToken !== s.envdAccessToken, 'own token');
		const r = await c.commands.run('id -un');
		check(r.stdout.trim() === 'user', "E2B's user is there", r);

		// a name already taken by something not made here: 409
		const taken = await raw('POST', `/sandboxes/${s.sandboxId}/snapshots`, { name: 'base' });
		check(taken.status === 409, 'name base -> 409', taken);
		const badName = await raw('POST', `/sandboxes/${s.sandboxId}/snapshots`, { name: '../x' });
		check(badName.status === 400, 'name ../x -> 400', badName);
		const e = await throws(() => Sandbox.createSnapshot('nosuchsandbox0'));
		check(e instanceof SandboxNotFoundError, 'snapshot of an unknown sandbox', String(e));

		// delete: refused while a sandbox made from it lives (409), then 204; 404 after
		const busy = await throws(() => Sandbox.deleteSnapshot(info.snapshotId));
		check(busy !== null && /409|started from it/.test(String(busy)), 'delete while used -> error', String(busy));
		await c.kill();
		await byName.kill();
		check((await Sandbox.deleteSnapshot(info.snapshotId)) === true, 'deleteSnapshot -> true');
		check((await Sandbox.deleteSnapshot(info.snapshotId)) === false, 'deleteSnapshot again -> false');
		const gone = await throws(() => create(info.snapshotId));
		check(gone !== null, 'create from a deleted snapshot fails', String(gone));
		const goneName = await throws(() => create(`${tag}-snap`));
		check(goneName !== null, 'create from a deleted name fails', String(goneName));
		check((await Sandbox.deleteSnapshot('base')) === false, 'delete base -> 404 (false)');
		await s.kill();
	},

	async list() {
		const tag = `l${process.pid}`;
		const a = await create();
		const b = await create();
		const sa = [await snapshot(a, { name: `${tag}-a1` }), await snapshot(a), await snapshot(a, { name: `${tag}-a3` })];
		const sb = await snapshot(b, { name: `${tag}-b1` });
		const ofA = await allSnapshots({ sandboxId: a.sandboxId, limit: 2 });
		check(ofA.length === 3, "a's three, paged by 2", ofA);
		check(new Set(ofA.map((x) => x.snapshotId)).size === 3, 'no repeats across pages', ofA);
		check(sa.every((x) => ofA.some((y) => y.snapshotId === x.snapshotId)), "all of a's", ofA);
		const page = Sandbox.listSnapshots({ sandboxId: a.sandboxId, limit: 2 });
		check((await page.nextItems()).length === 2 && page.hasNext, 'first page of 2 says there is more');
		const ofB = await allSnapshots({ sandboxId: b.sandboxId });
		check(ofB.length === 1 && ofB[0].snapshotId === sb.snapshotId && ofB[0].names[0] === `${tag}-b1`, "b's", ofB);
		const named = await allSnapshots({ name: `${tag}-a3` });
		check(named.length === 1 && named[0].snapshotId === sa[2].snapshotId, 'by name', named);
		const mine = await a.listSnapshots();
		check(mine.hasNext && (await mine.nextItems()).length === 3, 'sandbox.listSnapshots()');
		const all = await allSnapshots();
		check(all.length >= 4, 'all', all.length);
		const bad = await raw('GET', '/snapshots?limit=0');
		check(bad.status === 400, 'limit=0 -> 400', bad);
		const tok = await raw('GET', '/snapshots?nextToken=abc');
		check(tok.status === 400, 'a bad nextToken -> 400', tok);
		for (const x of [...sa, sb]) check(await Sandbox.deleteSnapshot(x.snapshotId), 'delete');
		check((await allSnapshots({ sandboxId: a.sandboxId })).length === 0, 'deleted ones are not listed');
		await a.kill();
		await b.kill();
	},

	async fork() {
		const s = await create(undefined, { metadata: { who: 'parent' } });
		await s.files.write('/home/user/f.txt', 'parent');
		const forks = await Sandbox.fork(s.sandboxId, { count: 2, timeoutMs: 120_000 });
		check(forks.length === 2 && forks.every((f) => f instanceof Sandbox), 'two sandboxes', forks.map(String));
		created.push(...forks.map((f) => f.sandboxId));
		const [f1, f2] = forks;
		check(new Set([s.sandboxId, f1.sandboxId, f2.sandboxId]).size === 3, 'distinct ids');
		check(new Set([s.envdAccessToken, f1.envdAccessToken, f2.envdAccessToken]).size === 3, 'tokens differ');
		for (const f of forks) check((await f.files.read('/home/user/f.txt')) === 'parent', "the parent's file");
		await f1.files.write('/home/user/f.txt', 'one');
		check((await f2.files.read('/home/user/f.txt')) === 'parent', 'forks are independent');
		check((await s.files.read('/home/user/f.txt')) === 'parent', 'the parent is untouched');
		const i = await f1.getInfo();
		check(i.state === 'running' && i.metadata.who === 'parent', "the parent's metadata", i);
		check(Math.abs(i.endAt - i.startedAt - 120_000) < 2000, 'the given timeout', i);
		// a fork's token does not open another's data plane
		const cross = await fetch(`${process.env.E2B_SANDBOX_URL}/files?path=/home/user/f.txt`, {
			headers: { 'E2b-Sandbox-Id': f2.sandboxId, 'E2b-Sandbox-Port': '49983', 'X-Access-Token': f1.envdAccessToken },
		});
		check(cross.status === 401, "one fork's token on another -> 401", cross.status);
		// default count: one
		const one = await Sandbox.fork(s.sandboxId);
		check(one.length === 1 && one[0] instanceof Sandbox, 'no count: one', one.map(String));
		created.push(one[0].sandboxId);
		// fork's own snapshots are not E2B snapshots
		check((await allSnapshots({ sandboxId: s.sandboxId })).length === 0, 'forks list no snapshot');
		for (const f of [...forks, ...one]) check(await f.kill(), 'kill a fork');
		const e = await throws(() => Sandbox.fork('nosuchsandbox0', { count: 1 }));
		check(e instanceof SandboxNotFoundError, 'fork of an unknown sandbox', String(e));
		await s.kill();
	},

	async attacks() {
		const s = await create();
		const id = s.sandboxId;
		for (const count of [0, -1, 11, 1_000_000, 1.5, '2', true]) {
			const r = await raw('POST', `/sandboxes/${id}/fork`, { count });
			check(r.status === 400 && r.json.code === 400, `count ${JSON.stringify(count)} -> 400`, r);
		}
		const t = await raw('POST', `/sandboxes/${id}/fork`, { count: 1, timeout: -5 });
		check(t.status === 400, 'timeout -5 -> 400', t);
		// unknown ids, ids of things that are not E2B sandboxes, prefixes
		for (const bad of ['nosuchsandbox0', id.slice(0, 6), 'ABC', 'a%2Fb']) {
			for (const [m, op] of [['GET', 'metrics'], ['POST', 'snapshots'], ['POST', 'fork']]) {
				const r = await raw(m, `/sandboxes/${bad}/${op}`, m === 'POST' ? {} : undefined);
				check(r.status === 404 && r.json.code === 404, `${m} ${bad}/${op} -> 404`, r);
			}
		}
		// a path that climbs: sent as is (fetch would normalise it)
		const http = await import('node:http');
		const u = new URL(api);
		for (const path of ['/sandboxes/../snapshots', '/sandboxes/%2e%2e/metrics', `/sandboxes/${id}/%2e%2e/fork`, `/sandboxes/${id}/../../snapshots`, '/templates/../sandboxes', '/templates/..%2fsandboxes']) {
			const status = await new Promise((resolve, reject) => {
				const req = http.request({ host: u.hostname, port: u.port, path, method: 'DELETE', headers: { 'X-API-Key': key } }, (res) => {
					res.resume();
					resolve(res.statusCode);
				});
				req.on('error', reject);
				req.end();
			});
			check(status === 404 || status === 400, `${path} -> 404/400`, status);
		}
		check(await s.isRunning(), 'the sandbox survives');
		// deleting what is not an E2B snapshot: 404
		for (const ref of ['base', 'host', id, 'sha256:' + '0'.repeat(64)]) {
			const r = await raw('DELETE', `/templates/${encodeURIComponent(ref)}`);
			check(r.status === 404, `DELETE /templates/${ref} -> 404`, r);
		}
		// no key, a wrong key: 401 on every new call
		for (const [m, p] of [['GET', `/sandboxes/${id}/metrics`], ['POST', `/sandboxes/${id}/snapshots`], ['POST', `/sandboxes/${id}/fork`], ['GET', '/snapshots'], ['DELETE', '/templates/x']]) {
			for (const k of [null, 'e2b_0123456789abcdef']) {
				const r = await raw(m, p, m === 'POST' ? {} : undefined, k);
				check(r.status === 401, `${m} ${p} key ${k} -> 401`, r);
			}
		}
		const e = await throws(() => Sandbox.listSnapshots({ apiKey: 'e2b_0123456789abcdef' }).nextItems());
		check(e instanceof AuthenticationError, 'listSnapshots with a wrong key', String(e));
		await s.kill();
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
	for (const id of snaps) await Sandbox.deleteSnapshot(id).catch(() => {});
	process.exit(1);
}
