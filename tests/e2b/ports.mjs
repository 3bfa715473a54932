// The E2B port proxy of `sbx serve`: requests for any port of a sandbox but
// envd's and the code interpreter's reach that port on the sandbox's own
// loopback, where tests/e2b/port_server.py runs (started with the sbx CLI).
// Usage: node ports.mjs CASE, with E2B_API_URL, E2B_SANDBOX_URL,
// E2B_API_KEY and SBX_BIN (its store in SBX_ROOT/SBX_RUN, as the server's).
// Exits non-zero with a message on the first failed check.
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import http from 'node:http';
import net from 'node:net';
import { Sandbox } from 'e2b';

const [name] = process.argv.slice(2);
const url = new URL(process.env.E2B_SANDBOX_URL);
const created = [];
const PORT = 8000;

function check(cond, msg, extra) {
	if (!cond) throw new Error(`check failed: ${msg}${extra === undefined ? '' : `: ${JSON.stringify(extra)}`}`);
}
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function sbx(...args) {
	return execFileSync(process.env.SBX_BIN, args, { encoding: 'utf8' });
}

function hdrs(s, port = PORT, extra = {}) {
	return { 'E2b-Sandbox-Id': s.sandboxId, 'E2b-Sandbox-Port': String(port), 'X-Access-Token': s.envdAccessToken, ...extra };
}

// A sandbox with port_server.py listening on PORT inside.
async function withServer() {
	const s = await Sandbox.create();
	created.push(s);
	sbx('cp', new URL('./port_server.py', import.meta.url).pathname, `${s.sandboxId}:/tmp/port_server.py`);
	sbx('exec', '-d', s.sandboxId, '--', 'python3', '/tmp/port_server.py', String(PORT));
	for (let i = 0; i < 200; i++) {
		const r = await fetch(new URL('/log', url), { headers: hdrs(s) });
		await r.text();
		if (r.status === 200) return s;
		await sleep(50);
	}
	throw new Error('port_server.py did not come up');
}

// One raw exchange on a fresh connection: what the server answered before
// it closed (or timeoutMs passed).
function raw(data, timeoutMs = 3000) {
	return new Promise((resolve) => {
		const c = net.connect(Number(url.port), url.hostname);
		let out = '';
		c.on('data', (d) => (out += d.toString('latin1')));
		const done = () => resolve(out);
		c.on('close', done);
		c.on('error', done);
		c.setTimeout(timeoutMs, () => c.destroy());
		c.write(data);
	});
}

const cases = {
	// GET and POST with a query, headers, a body; what the server saw; keep-alive.
	async http() {
		const s = await withServer();
		let r = await fetch(new URL('/echo?x=1&y=a%20b&flag', url), { headers: hdrs(s, PORT, { 'X-Mine': 'v1' }) });
		check(r.status === 200 && r.headers.get('x-echo') === 'yes', 'GET through the proxy', r.status);
		let j = await r.json();
		check(j.method === 'GET' && j.path === '/echo?x=1&y=a%20b&flag', 'path and query', j);
		check(j.headers['x-mine'] === 'v1', 'a header of the client passes', j.headers);
		for (const h of ['x-access-token', 'e2b-sandbox-id', 'e2b-sandbox-port', 'e2b-traffic-access-token'])
			check(!(h in j.headers), `the front door's ${h} stays out of the sandbox`, j.headers);
		const big = 'z'.repeat(3 << 20);
		r = await fetch(new URL('/echo', url), { method: 'POST', headers: hdrs(s), body: big });
		j = await r.json();
		check(j.method === 'POST' && j.body_len === big.length, 'a 3 MiB body arrives whole', j.body_len);
		// The traffic token opens the port too (what the SDK sends for getHost's traffic).
		r = await fetch(new URL('/echo', url), {
			headers: { 'E2b-Sandbox-Id': s.sandboxId, 'E2b-Sandbox-Port': String(PORT), 'E2b-Traffic-Access-Token': s.trafficAccessToken },
		});
		check(r.status === 200, 'the traffic token opens the port', r.status);
		await r.text();
		// Keep-alive: three requests on one client connection.
		const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
		const reused = [];
		for (let i = 0; i < 3; i++)
			await new Promise((resolve, reject) => {
				const q = http.get(new URL(`/echo?i=${i}`, url), { agent, headers: hdrs(s) }, (res) => {
					res.resume();
					res.on('end', resolve);
				});
				q.on('error', reject);
				reused.push(q);
			});
		check(reused[1].reusedSocket && reused[2].reusedSocket, 'keep-alive: the connection is reused');
		agent.destroy();
		// A streamed answer arrives as it is written.
		const ac = new AbortController();
		r = await fetch(new URL('/stream', url), { headers: hdrs(s), signal: ac.signal });
		const rd = r.body.getReader();
		const first = new TextDecoder().decode((await rd.read()).value);
		check(first.startsWith('tick 0'), 'a streamed body, first chunk at once', first);
		ac.abort();
	},

	// Upgrade: the connection is relayed both ways.
	async upgrade() {
		const s = await withServer();
		const sock = await new Promise((resolve, reject) => {
			const q = http.request(new URL('/up', url), { headers: { ...hdrs(s), Connection: 'Upgrade', Upgrade: 'echo' } });
			q.on('upgrade', (res, socket, head) => {
				check(res.statusCode === 101 && res.headers.upgrade === 'echo', '101 with Upgrade', res.headers);
				if (head.length) socket.unshift(head);
				resolve(socket);
			});
			q.on('response', (res) => reject(new Error(`no upgrade: ${res.statusCode}`)));
			q.on('error', reject);
			q.end();
		});
		const payload = Buffer.alloc(2 << 20, 'q');
		payload.write('hello', 0);
		let got = Buffer.alloc(0);
		const done = new Promise((resolve) => {
			sock.on('data', (d) => {
				got = Buffer.concat([got, d]);
				if (got.length >= payload.length) resolve();
			});
		});
		sock.write(payload);
		await Promise.race([done, sleep(20000)]);
		check(got.length === payload.length && got.equals(payload), '2 MiB echoed through the upgraded connection', got.length);
		sock.end();
		await new Promise((r) => sock.on('close', r));
		// A WebSocket handshake: the server's Sec-WebSocket-Accept comes back.
		const key = Buffer.from('0123456789abcdef').toString('base64');
		const ws = await new Promise((resolve, reject) => {
			const q = http.request(new URL('/ws', url), {
				headers: { ...hdrs(s), Connection: 'Upgrade', Upgrade: 'websocket', 'Sec-WebSocket-Key': key, 'Sec-WebSocket-Version': '13' },
			});
			q.on('upgrade', (res, socket) => resolve({ res, socket }));
			q.on('response', (res) => reject(new Error(`no upgrade: ${res.statusCode}`)));
			q.on('error', reject);
			q.end();
		});
		const want = createHash('sha1').update(key + '258EAFA5-E914-47DA-95CA-C5AB0DC85B11').digest('base64');
		check(ws.res.headers['sec-websocket-accept'] === want && ws.res.headers.upgrade === 'websocket', 'Sec-WebSocket-Accept', ws.res.headers);
		const echoed = new Promise((r) => ws.socket.once('data', (d) => r(d.toString())));
		ws.socket.write('frame');
		check((await echoed) === 'frame', 'bytes relayed after the WebSocket handshake');
		ws.socket.destroy();
	},

	// 502 where nothing listens, 400 for a bad port, 401 for other tokens.
	async refusals() {
		const a = await withServer();
		const b = await Sandbox.create();
		created.push(b);
		let r = await fetch(new URL('/', url), { headers: hdrs(a, 8001) });
		let j = await r.json();
		check(r.status === 502 && j.code === 502 && j.port === 8001 && j.sandboxId === a.sandboxId, '502 when nothing listens', j);
		// E2B's own tests compare the message exactly; a browser gets E2B's page title
		check(j.message === 'The sandbox is running but port is not open', "E2B's exact message", j);
		const BROWSER = 'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0 Safari/537.36';
		r = await fetch(new URL('/', url), { headers: hdrs(a, 8001, { 'User-Agent': BROWSER }) });
		let page = await r.text();
		check(r.status === 502 && /text\/html/.test(r.headers.get('content-type')) && page.includes('<title>Closed Port Error</title>'),
			'a browser gets the closed port page', [r.status, page.slice(0, 200)]);
		r = await fetch(new URL('/', url), { headers: { ...hdrs(a, 8001, { 'User-Agent': BROWSER }), 'E2b-Sandbox-Id': 'nosuchsandbox0' } });
		page = await r.text();
		check(r.status === 502 && page.includes('<title>Sandbox Not Found</title>') && page.includes('nosuchsandbox0'),
			'a browser gets the not found page', [r.status, page.slice(0, 200)]);
		for (const p of ['0', '65536', '99999', 'x', '-1', '80 80'])
			check((await fetch(new URL('/', url), { headers: { ...hdrs(a), 'E2b-Sandbox-Port': p } })).status === 400, `port ${p} is 400`);
		r = await fetch(new URL('/echo', url), { headers: { ...hdrs(a), 'X-Access-Token': b.envdAccessToken } });
		check(r.status === 401, "another sandbox's token", r.status);
		r = await fetch(new URL('/echo', url), {
			headers: { 'E2b-Sandbox-Id': a.sandboxId, 'E2b-Sandbox-Port': String(PORT), 'E2b-Traffic-Access-Token': b.trafficAccessToken },
		});
		check(r.status === 401, "another sandbox's traffic token", r.status);
		// The traffic token does not open envd's port.
		r = await fetch(new URL('/envs', url), {
			headers: { 'E2b-Sandbox-Id': a.sandboxId, 'E2b-Sandbox-Port': '49983', 'E2b-Traffic-Access-Token': a.trafficAccessToken },
		});
		check(r.status === 401, "the traffic token does not open envd's port", r.status);
		// b's port 8000 has nothing (a's server is a's alone).
		r = await fetch(new URL('/log', url), { headers: hdrs(b) });
		check(r.status === 502, "a's server is not reachable as b's port", r.status);
		await r.text();
		// /health of a proxied port is the sandbox's server's, and needs the token.
		r = await fetch(new URL('/health', url), { headers: { 'E2b-Sandbox-Id': a.sandboxId, 'E2b-Sandbox-Port': String(PORT) } });
		check(r.status === 401, '/health of a proxied port needs the token', r.status);
	},

	// `sbx serve --domain sbx.test`: a Host of {port}-{id}.sbx.test routes as
	// the E2b-Sandbox-* headers do (E2B's own proxy rule), and wins over them;
	// another name under the domain is refused; names outside it are not the
	// data plane.
	async host() {
		const D = 'sbx.test';
		const s = await withServer();
		const b = await Sandbox.create();
		created.push(b);
		check(s.getHost(PORT) === `${PORT}-${s.sandboxId}.${D}`, "getHost(port) is under the server's domain", s.getHost(PORT));
		const get = (host, path, extra = {}) =>
			raw(`GET ${path} HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n` + Object.entries(extra).map(([k, v]) => `${k}: ${v}\r\n`).join('') + '\r\n');
		const status = (r) => Number((/^HTTP\/1\.1 (\d+)/.exec(r) || [])[1] || 0);
		const mine = { 'X-Access-Token': s.envdAccessToken };
		let r = await get(`${PORT}-${s.sandboxId}.${D}`, '/echo?via=host', mine);
		check(status(r) === 200 && /"path":\s*"\/echo\?via=host"/.test(r), 'the port, by Host', r.slice(0, 300));
		r = await get(`${PORT}-${s.sandboxId.toUpperCase()}.SBX.Test:${url.port}`, '/echo', mine);
		check(status(r) === 200, 'any case, with the listener port', r.slice(0, 120));
		r = await get(`${PORT}-${s.sandboxId}.${D}`, '/echo', { 'E2b-Traffic-Access-Token': s.trafficAccessToken });
		check(status(r) === 200, 'the traffic token opens it by Host too', r.slice(0, 120));
		r = await get(`${PORT}-${s.sandboxId}.${D}`, '/echo');
		check(status(r) === 401, 'no token: 401', r.slice(0, 120));
		r = await get(`${PORT}-${s.sandboxId}.${D}`, '/echo', { 'X-Access-Token': b.envdAccessToken });
		check(status(r) === 401, "another sandbox's token: 401", r.slice(0, 120));
		// The Host wins over the headers: b named in them with b's token does not open s.
		r = await get(`${PORT}-${s.sandboxId}.${D}`, '/echo', { 'E2b-Sandbox-Id': b.sandboxId, 'E2b-Sandbox-Port': String(PORT), 'X-Access-Token': b.envdAccessToken });
		check(status(r) === 401, 'the Host, not the headers, names the sandbox', r.slice(0, 120));
		// envd's port by Host: /health without a token, /files with it
		r = await get(`49983-${s.sandboxId}.${D}`, '/health');
		check(status(r) === 204, "envd's /health by Host", r.slice(0, 120));
		r = await get(`49983-${s.sandboxId}.${D}`, '/files?path=%2Ftmp%2Fport_server.py', mine);
		check(status(r) === 200 && r.includes('import http.server'), "envd's /files by Host", r.slice(0, 120));
		r = await get(`49983-nosuchsandbox.${D}`, '/health');
		check(status(r) === 502 && r.includes('The sandbox was not found'), 'an unknown sandbox: 502', r.slice(0, 200));
		for (const bad of [`foo.${D}`, `0-${s.sandboxId}.${D}`, `99999-${s.sandboxId}.${D}`, `${PORT}-.${D}`, `${PORT}-a_b.${D}`, `x-y-z.${D}`]) {
			r = await get(bad, '/health', mine);
			check(status(r) === 400, `${bad}: 400`, r.slice(0, 160));
		}
		// names outside the domain, the domain itself, sandbox.D: not the data plane
		for (const other of [D, `sandbox.${D}`, 'localhost', `${PORT}-${s.sandboxId}.other.test`]) {
			r = await get(other, '/echo', mine);
			check(status(r) === 404, `${other} is not routed to a sandbox`, r.slice(0, 160));
		}
	},

	// Request smuggling: a request hidden in another's body (two
	// Content-Lengths, Content-Length with Transfer-Encoding) that carries no
	// token of its own never reaches the sandbox: each request is framed by
	// the front door, authorized on its own, and rebuilt towards the sandbox.
	// An oversized head is refused.
	async smuggling() {
		const s = await withServer();
		const h = `E2b-Sandbox-Id: ${s.sandboxId}\r\nE2b-Sandbox-Port: ${PORT}\r\nX-Access-Token: ${s.envdAccessToken}\r\n`;
		const sm = `GET /smuggled HTTP/1.1\r\nHost: x\r\nE2b-Sandbox-Id: ${s.sandboxId}\r\nE2b-Sandbox-Port: ${PORT}\r\n\r\n`;
		const a1 = await raw(`POST /echo HTTP/1.1\r\nHost: x\r\n${h}Content-Length: 4\r\nContent-Length: ${4 + sm.length}\r\n\r\nabcd${sm}`);
		const a2 = await raw(`POST /echo HTTP/1.1\r\nHost: x\r\n${h}Transfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n0\r\n\r\n${sm}`);
		const a3 = await raw(`POST /echo HTTP/1.1\r\nHost: x\r\n${h}Transfer-Encoding: chunked, identity\r\n\r\n0\r\n\r\n${sm}`);
		const a4 = await raw(`GET /echo HTTP/1.1\r\nHost: x\r\n${h}X-Big: ${'b'.repeat(200 << 10)}\r\n\r\n`);
		check(!/^HTTP\/1\.1 200/.test(a4), 'a 200 KiB header is refused', a4.slice(0, 80));
		const log = await (await fetch(new URL('/log', url), { headers: hdrs(s) })).text();
		check(!log.includes('/smuggled'), 'no smuggled request reached the sandbox', { log, a1: a1.slice(0, 200), a2: a2.slice(0, 200), a3: a3.slice(0, 200) });
		// What did reach it was framed by the front door: one body of 4 or 0 bytes each.
		for (const a of [a1, a2]) {
			const m = /"body_len": (\d+)/.exec(a);
			check(!m || Number(m[1]) <= 5, 'the body the sandbox saw is the one framed', a.slice(0, 300));
		}
	},

	// A slow client and a flooding one do not hold up others.
	async slow() {
		const s = await withServer();
		const h = `E2b-Sandbox-Id: ${s.sandboxId}\r\nE2b-Sandbox-Port: ${PORT}\r\nX-Access-Token: ${s.envdAccessToken}\r\n`;
		const slow = [];
		for (let i = 0; i < 20; i++) {
			const c = net.connect(Number(url.port), url.hostname);
			c.on('error', () => {});
			c.write(`POST /echo HTTP/1.1\r\nHost: x\r\n${h}Content-Length: 100000000\r\n\r\nabc`);
			slow.push(c);
		}
		// A client that never reads a streamed answer.
		const stuck = net.connect(Number(url.port), url.hostname);
		stuck.on('error', () => {});
		stuck.write(`GET /stream HTTP/1.1\r\nHost: x\r\n${h}\r\n`);
		stuck.pause();
		await sleep(500);
		const t0 = Date.now();
		for (let i = 0; i < 5; i++) {
			const r = await fetch(new URL(`/echo?n=${i}`, url), { headers: hdrs(s) });
			check(r.status === 200, 'served beside slow clients', r.status);
			await r.text();
		}
		check(Date.now() - t0 < 5000, 'in time', Date.now() - t0);
		for (const c of slow) c.destroy();
		stuck.destroy();
	},

	// A sandbox killed mid-stream ends the stream; the server goes on.
	async killed() {
		const s = await withServer();
		const r = await fetch(new URL('/stream', url), { headers: hdrs(s) });
		const rd = r.body.getReader();
		await rd.read();
		const t0 = Date.now();
		await s.kill();
		let ended = false;
		try {
			for (;;) {
				const { done } = await Promise.race([rd.read(), sleep(15000).then(() => ({ done: 'timeout' }))]);
				if (done === 'timeout') break;
				if (done) {
					ended = true;
					break;
				}
			}
		} catch {
			ended = true;
		}
		check(ended && Date.now() - t0 < 15000, 'the stream ended when the sandbox was killed', Date.now() - t0);
		const r2 = await fetch(new URL('/echo', url), { headers: hdrs(s) });
		check(r2.status === 502, 'a killed sandbox is 502', r2.status);
		const t = await withServer();
		check((await fetch(new URL('/echo', url), { headers: hdrs(t) })).status === 200, 'another sandbox still served');
	},
};

const fn = cases[name];
if (!fn) {
	console.error(`usage: node ports.mjs ${Object.keys(cases).join('|')}`);
	process.exit(2);
}
try {
	await fn();
} catch (e) {
	console.error(e && e.stack ? e.stack : String(e));
	process.exitCode = 1;
} finally {
	for (const s of created) await s.kill().catch(() => {});
}
