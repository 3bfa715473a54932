// E2B's SDK (unchanged) against `sbx serve`: the network a sandbox asks
// for, within the server's cap (--policy), PUT /sandboxes/{id}/network
// (updateNetwork) and envd's GET /envs. Usage: node network.mjs CASE with
// E2B_API_URL, E2B_SANDBOX_URL, E2B_API_KEY; `egress` also needs PORT (a
// server on the host's 127.0.0.1 that answers "hello from the host") and a
// server whose cap allows 127.0.0.1 on every port. Exits non-zero with a
// message on the first failed check; every case kills what it creates.
import { execFileSync } from 'node:child_process';
import { ALL_TRAFFIC, Sandbox, SandboxNotFoundError } from 'e2b';

const [name] = process.argv.slice(2);
const url = process.env.E2B_SANDBOX_URL;
const apiUrl = process.env.E2B_API_URL;
const key = process.env.E2B_API_KEY;
const created = [];

function check(cond, msg, extra) {
	if (!cond) {
		throw new Error(`check failed: ${msg}${extra === undefined ? '' : `: ${JSON.stringify(extra)}`}`);
	}
}

async function create(opts) {
	const s = await Sandbox.create(opts);
	created.push(s.sandboxId);
	return s;
}

// The error a call throws (null if none).
async function refusal(fn) {
	try {
		const r = await fn();
		if (r && r.sandboxId) created.push(r.sandboxId);
	} catch (e) {
		return e;
	}
	return null;
}

async function raw(method, path, body, headers = {}) {
	const r = await fetch(`${apiUrl}${path}`, {
		method,
		headers: { 'X-API-Key': key, 'Content-Type': 'application/json', ...headers },
		body,
	});
	return { status: r.status, body: await r.text() };
}

async function envs(id, token) {
	const headers = { 'E2b-Sandbox-Id': id, 'E2b-Sandbox-Port': '49983' };
	if (token) headers['X-Access-Token'] = token;
	const r = await fetch(`${url}/envs`, { headers });
	return { status: r.status, body: await r.text() };
}

// What the sandbox gets from the host's server through its egress proxy.
async function fetchHost(s, port) {
	const r = await s.commands.run(
		`curl -s --max-time 10 --noproxy '' -x "$HTTP_PROXY" -o - -w ' %{http_code}' http://127.0.0.1:${port}/ || true`,
		{ timeoutMs: 30_000 },
	);
	return r.stdout.replace(/\s+/g, ' ').trim();
}

const cases = {
	// The server's default cap: no network.
	async cap_none() {
		let e = await refusal(() => Sandbox.create({ allowInternetAccess: true }));
		check(e && /403/.test(e.message) && /without --policy/.test(e.message), 'internet beyond the cap: 403 naming the cap', String(e));
		e = await refusal(() => Sandbox.create({ network: { allowOut: ['example.com'], denyOut: [ALL_TRAFFIC] } }));
		check(e && /403/.test(e.message) && /'example\.com:\*'/.test(e.message), 'a host beyond the cap: 403 naming it', String(e));
		e = await refusal(() => Sandbox.create({ network: { allowOut: ['10.0.0.0/8'], denyOut: [ALL_TRAFFIC] } }));
		check(e && /400/.test(e.message) && /10\.0\.0\.0\/8/.test(e.message), 'a range: 400 naming it', String(e));
		e = await refusal(() => Sandbox.create({ network: { denyOut: ['192.168.0.0/16'] } }));
		check(e && /400/.test(e.message) && /192\.168\.0\.0\/16/.test(e.message), 'a partial deny: 400 naming it', String(e));
		e = await refusal(() => Sandbox.create({ network: { allowOut: ['a.test'], denyOut: [ALL_TRAFFIC], rules: { 'a.test': [{ transform: { headers: { A: 'b' } } }] } } }));
		check(e && /400/.test(e.message) && /rules/.test(e.message), 'transforms: 400', String(e));
		e = await refusal(() => Sandbox.create({ network: { allowPublicTraffic: true } }));
		check(e && /400/.test(e.message) && /allowPublicTraffic/.test(e.message), 'public traffic: 400', String(e));

		// nothing asked, or nothing allowed: fine
		const s = await create({ envs: { GREETING: 'hi there', EMPTY: '' }, network: { denyOut: [ALL_TRAFFIC] } });
		const info = await s.getInfo();
		check(info.allowInternetAccess === false, 'getInfo().allowInternetAccess', info);
		const t = await create({ allowInternetAccess: false });

		// GET /envs: the sandbox's variables, its own token only
		const own = await envs(s.sandboxId, s.envdAccessToken);
		check(own.status === 200, 'GET /envs with the token', own);
		const vars = JSON.parse(own.body);
		check(vars.GREETING === 'hi there' && vars.EMPTY === '', 'GET /envs has the envVars', vars);
		const other = await envs(s.sandboxId, t.envdAccessToken);
		check(other.status === 401, "GET /envs with another sandbox's token: 401", other);
		const none = await envs(s.sandboxId, null);
		check(none.status === 401, 'GET /envs without a token: 401', none);

		// PUT /network: nothing to allow on a sandbox without network is fine, more is not
		await s.updateNetwork({ denyOut: [ALL_TRAFFIC] });
		e = await refusal(() => s.updateNetwork({ allowOut: ['example.com'], denyOut: [ALL_TRAFFIC] }));
		check(e && /403/.test(e.message), 'update beyond the cap: 403', String(e));
		e = await refusal(() => s.updateNetwork({}));
		check(e && /403/.test(e.message) && /all traffic/.test(e.message), 'an update that clears every rule asks for all traffic: 403', String(e));
		e = await refusal(() => Sandbox.updateNetwork('nosuchsandbox0', { denyOut: [ALL_TRAFFIC] }));
		check(e instanceof SandboxNotFoundError, 'update of an unknown sandbox: SandboxNotFoundError', String(e));
		// an sbx environment not made through this API is no E2B sandbox
		const sbxEnv = execFileSync(process.env.SBX_BIN, ['create', '--network', 'allow=example.com'], { encoding: 'utf8' }).trim();
		try {
			e = await refusal(() => Sandbox.updateNetwork(sbxEnv, { allowInternetAccess: false }));
			check(e instanceof SandboxNotFoundError, "update of sbx's own environment: SandboxNotFoundError", String(e));
		} finally {
			execFileSync(process.env.SBX_BIN, ['rm', sbxEnv]);
		}
		const bad = await raw('PUT', `/sandboxes/${s.sandboxId}/network`, '{"allowOut": [');
		check(bad.status === 400, 'bad JSON: 400', bad);
		const badType = await raw('PUT', `/sandboxes/${s.sandboxId}/network`, '{"allowOut": "a.test"}');
		check(badType.status === 400 && /array/.test(badType.body), 'allowOut not an array: 400', badType);
		const noKey = await raw('PUT', `/sandboxes/${s.sandboxId}/network`, '{}', { 'X-API-Key': 'e2b_00' });
		check(noKey.status === 401, 'a wrong API key: 401', noKey);
	},

	// A cap that allows the host's 127.0.0.1 (every port): real egress.
	async egress() {
		const port = process.env.PORT;
		const a = await create({ network: { allowOut: ['127.0.0.1'], denyOut: [ALL_TRAFFIC] } });
		const b = await create({ network: { denyOut: [ALL_TRAFFIC] } });
		check((await fetchHost(a, port)) === 'hello from the host 200', 'an allowed host is reached', await fetchHost(a, port));
		const denied = await fetchHost(b, port);
		check(/ 403$/.test(denied), 'a host not allowed is refused by the proxy', denied);
		const ia = await a.getInfo();
		check(ia.network && ia.network.allowOut && ia.network.allowOut.includes('127.0.0.1:*'), 'getInfo().network.allowOut', ia);

		// the live sandbox gets the host, then loses it again
		await b.updateNetwork({ allowOut: ['127.0.0.1'], denyOut: [ALL_TRAFFIC] });
		check((await fetchHost(b, port)) === 'hello from the host 200', 'reached after updateNetwork', await fetchHost(b, port));
		await b.updateNetwork({ allowInternetAccess: false });
		check(/ 403$/.test(await fetchHost(b, port)), 'refused after updateNetwork takes it away', await fetchHost(b, port));
		// the cap holds for updates too, and a refused update changes nothing
		await a.updateNetwork({ allowOut: ['127.0.0.1'], denyOut: [ALL_TRAFFIC] });
		let e = await refusal(() => a.updateNetwork({ allowOut: ['evil.test'], denyOut: [ALL_TRAFFIC] }));
		check(e && /403/.test(e.message) && /evil\.test/.test(e.message), 'update beyond the cap: 403 naming the rule', String(e));
		e = await refusal(() => a.updateNetwork({ allowOut: ['127.0.0.0/8'], denyOut: [ALL_TRAFFIC] }));
		check(e && /400/.test(e.message) && /127\.0\.0\.0\/8/.test(e.message), 'a range: 400 naming it', String(e));
		check((await fetchHost(a, port)) === 'hello from the host 200', 'a refused update changes nothing', await fetchHost(a, port));
		e = await refusal(() => Sandbox.create({ allowInternetAccess: true }));
		check(e && /403/.test(e.message), 'all traffic beyond a list cap: 403', String(e));
		// the default under this cap: the cap's own list
		const c = await create({});
		check((await fetchHost(c, port)) === 'hello from the host 200', "nothing asked: the cap's list", await fetchHost(c, port));
		// a paused sandbox keeps its new list when it resumes
		await b.updateNetwork({ allowOut: ['127.0.0.1'], denyOut: [ALL_TRAFFIC] });
		await b.pause();
		const b2 = await Sandbox.connect(b.sandboxId);
		check((await fetchHost(b2, port)) === 'hello from the host 200', 'the list survives pause and resume', await fetchHost(b2, port));
	},

	// Under a cap of every public host (sbx serve --policy open), all traffic
	// is the egress proxy to public hosts: the host's own loopback services
	// and the cloud's metadata address stay out of reach, directly and
	// through the proxy; the live sandbox moves between that and a list.
	async internet() {
		const port = process.env.PORT;
		const s = await create({ allowInternetAccess: true });
		const d = await create({});
		for (const [x, what] of [[s, 'allowInternetAccess'], [d, "the cap's default"]]) {
			check((await x.getInfo()).allowInternetAccess === true, `${what}: getInfo().allowInternetAccess`, await x.getInfo());
			const host = await fetchHost(x, port);
			check(/ 403$/.test(host), `${what}: the host's loopback through the proxy is refused`, host);
			const direct = await x.commands.run(`curl -s --max-time 5 --noproxy '*' -o /dev/null -w '%{http_code}' http://127.0.0.1:${port}/ || echo " failed"`);
			check(/failed/.test(direct.stdout), `${what}: the host's loopback directly is unreachable`, direct.stdout);
		}
		const md = await s.commands.run(`curl -s --max-time 10 -x "$HTTP_PROXY" http://169.254.169.254/latest/meta-data/ || true`);
		check(/refused/.test(md.stdout) && /internal address|IP rule/.test(md.stdout), 'cloud metadata refused by the proxy', md.stdout);
		// Any name passes the first gate (it fails only to resolve here); a
		// list refuses it at the first.
		const name = () => s.commands.run(`curl -s --max-time 10 -x "$HTTP_PROXY" http://no-such-host.invalid/ || true`);
		check(/cannot resolve/.test((await name()).stdout), 'every public name is allowed', (await name()).stdout);
		await s.updateNetwork({ allowOut: ['example.com'], denyOut: [ALL_TRAFFIC] });
		check((await s.getInfo()).allowInternetAccess === false, 'a list after updateNetwork', await s.getInfo());
		check(/no rule allows it/.test((await name()).stdout), 'a list refuses other names', (await name()).stdout);
		await s.updateNetwork({ allowInternetAccess: true });
		check(/cannot resolve/.test((await name()).stdout), 'all traffic again, live', (await name()).stdout);
		check(/ 403$/.test(await fetchHost(s, port)), 'and still not the host', await fetchHost(s, port));
		// internal addresses stay beyond this cap, in a list too
		const e = await refusal(() => s.updateNetwork({ allowOut: ['127.0.0.1'], denyOut: [ALL_TRAFFIC] }));
		check(e && /403/.test(e.message) && /127\.0\.0\.1/.test(e.message), 'an internal address beyond the cap: 403', String(e));
	},
};

const fn = cases[name];
if (!fn) {
	console.error(`unknown case ${name}; cases: ${Object.keys(cases).join(' ')}`);
	process.exit(2);
}
try {
	await fn();
} catch (e) {
	console.error(e.stack || String(e));
	process.exitCode = 1;
} finally {
	for (const id of created) await Sandbox.kill(id).catch(() => {});
}
