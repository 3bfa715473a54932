// MCP client tests for `sbx serve` (Streamable HTTP): the official SDK's
// StreamableHTTPClientTransport, plus raw fetch() checks of the HTTP rules.
// Usage: node http_test.mjs CASE URL [TOKEN]. Exits non-zero with a message
// on the first failed check. Every case destroys what it creates.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

const [name, url, token] = process.argv.slice(2);
const META = {
	'io.modelcontextprotocol/protocolVersion': '2026-07-28',
	'io.modelcontextprotocol/clientCapabilities': {},
};
const INIT = {
	jsonrpc: '2.0',
	id: 0,
	method: 'initialize',
	params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
};

function check(cond, msg, extra) {
	if (!cond) {
		throw new Error(`check failed: ${msg}${extra === undefined ? '' : `: ${JSON.stringify(extra)}`}`);
	}
}

function authHeaders() {
	return token ? { Authorization: `Bearer ${token}` } : {};
}

async function connect() {
	const transport = new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: authHeaders() } });
	const client = new Client({ name: 'sbx-http-tests', version: '1.0.0' });
	await client.connect(transport);
	return { client, transport };
}

async function ok(client, tool, args, opts) {
	const r = await client.callTool({ name: tool, arguments: args }, undefined, opts);
	check(!r.isError, `${tool} should succeed`, r);
	check(r.structuredContent && typeof r.structuredContent === 'object', `${tool}: structuredContent`, r);
	return r.structuredContent;
}

async function withEnv(client, fn) {
	const env = await ok(client, 'environment_create', {});
	try {
		return await fn(env.environment_id);
	} finally {
		await client.callTool({ name: 'environment_destroy', arguments: { environment_id: env.environment_id } }).catch(() => {});
	}
}

// One raw POST: returns {status, headers, text, json}.
async function post(body, headers = {}, init = {}) {
	const res = await fetch(url, {
		method: 'POST',
		headers: { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream', ...authHeaders(), ...headers },
		body: typeof body === 'string' || body instanceof ReadableStream ? body : JSON.stringify(body),
		...init,
	});
	const text = await res.text();
	let json;
	try {
		json = JSON.parse(text);
	} catch {}
	return { status: res.status, headers: res.headers, text, json };
}

async function rawSession() {
	const r = await post(INIT);
	check(r.status === 200, 'initialize: 200', r);
	const sid = r.headers.get('mcp-session-id');
	check(/^[0-9a-f]{32}$/.test(sid ?? ''), 'Mcp-Session-Id is 128-bit hex', sid);
	const n = await post({ jsonrpc: '2.0', method: 'notifications/initialized' }, { 'Mcp-Session-Id': sid });
	check(n.status === 202 && n.text === '', 'notification: 202, no body', n);
	return sid;
}

// Parses an SSE body into its data messages.
function sseMessages(text) {
	return text
		.split('\n\n')
		.filter((e) => e.trim())
		.map((e) => {
			const lines = e.split('\n');
			check(lines.includes('event: message'), 'SSE event type is message', e);
			return JSON.parse(lines.filter((l) => l.startsWith('data: ')).map((l) => l.slice(6)).join('\n'));
		});
}

async function procs(client, id) {
	const r = await ok(client, 'environment_execute', {
		environment_id: id,
		command: 'for p in /proc/[0-9]*; do cat $p/cmdline 2>/dev/null | tr "\\0" " "; echo; done',
	});
	return r.stdout;
}

async function waitGone(client, id, what) {
	const deadline = Date.now() + 5000;
	let out;
	do {
		out = await procs(client, id);
		if (!out.includes(what)) return;
		await new Promise((res) => setTimeout(res, 200));
	} while (Date.now() < deadline);
	check(false, `'${what}' was killed`, out);
}

const cases = {
	async sdk() {
		const { client, transport } = await connect();
		try {
			check(/^[0-9a-f]{32}$/.test(transport.sessionId ?? ''), 'SDK got a session id', transport.sessionId);
			check(client.getServerVersion()?.name === 'sbx', 'serverInfo.name', client.getServerVersion());
			const { tools } = await client.listTools();
			const names = tools.map((t) => t.name);
			for (const n of ['environment_create', 'environment_execute', 'environment_destroy'])
				check(names.includes(n), `tools/list has ${n}`, names);
			let id;
			await withEnv(client, async (envId) => {
				id = envId;
				let r = await ok(client, 'environment_execute', { environment_id: id, command: 'echo hi; exit 3' });
				check(r.exit_code === 3 && r.stdout === 'hi\n', 'execute over HTTP', r);
				r = await ok(client, 'environment_write_file', { environment_id: id, path: '/root/a.txt', content: 'héllo' });
				check(r.bytes_written === 6, 'write_file', r);
				r = await ok(client, 'environment_read_file', { environment_id: id, path: '/root/a.txt' });
				check(r.content === 'héllo', 'read_file', r);
			});
			const l = await ok(client, 'environment_list', {});
			check(!l.environments.some((e) => e.environment_id === id), 'destroyed', l);
			// DELETE ends the session; the old id is then unknown.
			const sid = transport.sessionId;
			await transport.terminateSession();
			const r = await post({ jsonrpc: '2.0', id: 9, method: 'tools/list' }, { 'Mcp-Session-Id': sid });
			check(r.status === 404, 'request on a deleted session: 404', r);
		} finally {
			await client.close();
		}
	},

	async progress() {
		const { client } = await connect();
		try {
			await withEnv(client, async (id) => {
				const seen = [];
				const r = await ok(
					client,
					'environment_execute',
					{ environment_id: id, command: 'for i in 1 2 3 4 5 6; do echo line$i; sleep 0.2; done' },
					{ onprogress: (p) => seen.push(p) },
				);
				check(r.stdout.split('\n').length === 7, 'all output in the result', r);
				check(seen.length >= 2, 'several progress notifications over SSE', seen);
				const text = seen.map((p) => p.message ?? '').join('');
				check(text.includes('line1') && text.includes('line3'), 'progress carries the output', seen);
			});
		} finally {
			await client.close();
		}
		// The same, raw: SSE only with a progressToken and an Accept that allows it.
		const sid = await rawSession();
		const h = { 'Mcp-Session-Id': sid, 'MCP-Protocol-Version': '2025-11-25' };
		const c = await post({ jsonrpc: '2.0', id: 1, method: 'environment.create', params: {} }, h);
		const id = c.json.result.environment_id;
		const exec = (rid, meta, accept) =>
			post(
				{
					jsonrpc: '2.0',
					id: rid,
					method: 'tools/call',
					params: { name: 'environment_execute', arguments: { environment_id: id, command: 'echo a; sleep 0.5; echo b' }, ...meta },
				},
				{ ...h, ...(accept ? { Accept: accept } : {}) },
			);
		let r = await exec(2, { _meta: { progressToken: 'tok' } });
		check(r.status === 200 && r.headers.get('content-type') === 'text/event-stream', 'SSE with a progressToken', r);
		const msgs = sseMessages(r.text);
		const last = msgs[msgs.length - 1];
		check(last.id === 2 && last.result.structuredContent.stdout === 'a\nb\n', 'the stream ends with the response', msgs);
		check(msgs.slice(0, -1).every((m) => m.method === 'notifications/progress' && m.params.progressToken === 'tok'), 'progress before it', msgs);
		check(msgs.length >= 2, 'at least one progress notification', msgs);
		r = await exec(3, {});
		check(r.headers.get('content-type') === 'application/json' && r.json.id === 3, 'no token: plain JSON', r);
		r = await exec(4, { _meta: { progressToken: 5 } }, 'application/json');
		check(r.headers.get('content-type') === 'application/json' && r.json.id === 4, 'Accept without SSE: plain JSON', r);
		r = await post({ jsonrpc: '2.0', id: 5, method: 'environment.destroy', params: { environment_id: id } }, h);
		check(r.json.result.destroyed === true, 'destroy', r);
	},

	async concurrency() {
		const { client } = await connect();
		try {
			await withEnv(client, async (id) => {
				const t0 = Date.now();
				const slow = ok(client, 'environment_execute', { environment_id: id, command: 'sleep 3; echo slow' });
				const fast = await ok(client, 'environment_execute', { environment_id: id, command: 'echo fast' });
				check(fast.stdout === 'fast\n', 'fast', fast);
				check(Date.now() - t0 < 2500, 'a slow call does not block another request', Date.now() - t0);
				// Raw, from another session at the same time.
				const sid = await rawSession();
				const r = await post({ jsonrpc: '2.0', id: 1, method: 'ping' }, { 'Mcp-Session-Id': sid });
				check(r.status === 200 && JSON.stringify(r.json.result) === '{}', 'ping while busy', r);
				check((await slow).stdout === 'slow\n', 'slow result');
			});
		} finally {
			await client.close();
		}
	},

	async cancel() {
		const { client } = await connect();
		try {
			await withEnv(client, async (id) => {
				// SDK cancellation: notifications/cancelled on the same session.
				const ac = new AbortController();
				const p = client.callTool(
					{ name: 'environment_execute', arguments: { environment_id: id, command: 'sleep 31' } },
					undefined,
					{ signal: ac.signal },
				);
				setTimeout(() => ac.abort('test cancels'), 700);
				let threw = false;
				try {
					await p;
				} catch {
					threw = true;
				}
				check(threw, 'aborted call rejects');
				await waitGone(client, id, 'sleep 31');
				// The client hangs up mid-call: the call is cancelled too.
				const ac2 = new AbortController();
				const r = fetch(url, {
					method: 'POST',
					headers: { 'Content-Type': 'application/json', ...authHeaders() },
					body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'environment.execute', params: { environment_id: id, command: 'sleep 32' } }),
					signal: ac2.signal,
				}).catch(() => 'aborted');
				await new Promise((res) => setTimeout(res, 700));
				check(/sleep 32/.test(await procs(client, id)), 'the raw call is running');
				ac2.abort();
				check((await r) === 'aborted', 'fetch aborted');
				await waitGone(client, id, 'sleep 32');
				const e = await ok(client, 'environment_execute', { environment_id: id, command: 'echo still-here' });
				check(e.stdout === 'still-here\n', 'environment usable after a disconnect', e);
			});
		} finally {
			await client.close();
		}
	},

	async raw() {
		const sid = await rawSession();
		const list = { jsonrpc: '2.0', id: 1, method: 'tools/list' };
		let r = await post(list);
		check(r.status === 400 && /Mcp-Session-Id/.test(r.json?.error?.message), 'no session: 400', r);
		r = await post(list, { 'Mcp-Session-Id': '0123456789abcdef0123456789abcdef' });
		check(r.status === 404 && r.json?.error?.code === -32001, 'unknown session: 404', r);
		r = await post(list, { 'Mcp-Session-Id': sid });
		check(r.status === 200 && r.json.result.tools.length >= 7, 'with the session: 200', r);
		r = await post(list, { 'Mcp-Session-Id': sid, 'MCP-Protocol-Version': '2025-06-18' });
		check(r.status === 200, 'supported MCP-Protocol-Version', r);
		r = await post(list, { 'Mcp-Session-Id': sid, 'MCP-Protocol-Version': '1999-01-01' });
		check(r.status === 400 && /MCP-Protocol-Version/.test(r.text), 'unsupported MCP-Protocol-Version: 400', r);
		// Origin (DNS rebinding).
		for (const o of ['http://localhost', 'http://localhost:3000', 'https://127.0.0.1:8443', 'http://[::1]:1']) {
			r = await post(list, { 'Mcp-Session-Id': sid, Origin: o });
			check(r.status === 200, `Origin ${o} allowed`, r);
		}
		for (const o of ['http://evil.example', 'http://localhost.evil.example', 'null', 'http://127.0.0.1.nip.io', 'file://']) {
			r = await post(list, { 'Mcp-Session-Id': sid, Origin: o });
			check(r.status === 403, `Origin ${o}: 403`, r);
		}
		// Malformed bodies.
		r = await post('{"jsonrpc":"2.0","id":1,', { 'Mcp-Session-Id': sid });
		check(r.status === 400 && r.json?.error?.code === -32700 && r.json.id === null, 'malformed JSON: 400 + -32700', r);
		r = await post('[]', { 'Mcp-Session-Id': sid });
		check(r.status === 400 && r.json?.error?.code === -32600, 'batch: 400 + -32600', r);
		r = await post('{"jsonrpc":"2.0","id":2,"method":7}', { 'Mcp-Session-Id': sid });
		check(r.status === 400 && r.json?.error?.code === -32600, 'invalid request: 400 + -32600', r);
		r = await post(list, { 'Mcp-Session-Id': sid, 'Content-Type': 'text/plain' });
		check(r.status === 415, 'text/plain: 415', r);
		r = await post({ jsonrpc: '2.0', id: 3, method: 'no/such' }, { 'Mcp-Session-Id': sid });
		check(r.status === 200 && r.json.error.code === -32601, 'unknown method: JSON-RPC error in a 200', r);
		// Oversized bodies: with a Content-Length (refused at the headers) and chunked.
		const big = JSON.stringify({ jsonrpc: '2.0', id: 4, method: 'ping', params: { pad: 'x'.repeat(5 << 20) } });
		r = await post(big, { 'Mcp-Session-Id': sid }).catch((e) => ({ status: 'error', e: String(e) }));
		check(r.status === 413, 'oversized body: 413', r.status === 'error' ? r : r.status);
		const stream = new ReadableStream({
			start(c) {
				for (let i = 0; i < 5; i++) c.enqueue(new TextEncoder().encode(big.slice(i * (big.length / 5), (i + 1) * (big.length / 5))));
				c.close();
			},
		});
		r = await post(stream, { 'Mcp-Session-Id': sid }, { duplex: 'half' });
		check(r.status === 413, 'oversized chunked body: 413', r.status);
		// Other methods and paths.
		let res = await fetch(url, { headers: { Accept: 'text/event-stream', 'Mcp-Session-Id': sid, ...authHeaders() } });
		check(res.status === 405 && /POST/.test(res.headers.get('allow')), 'GET: 405 with Allow', res.status);
		res = await fetch(new URL('/other', url), { method: 'POST', headers: authHeaders(), body: '{}' });
		check(res.status === 404, 'other path: 404', res.status);
		res = await fetch(url, { method: 'DELETE', headers: authHeaders() });
		check(res.status === 400, 'DELETE without a session: 400', res.status);
		res = await fetch(url, { method: 'DELETE', headers: { 'Mcp-Session-Id': sid, ...authHeaders() } });
		check(res.status === 200, 'DELETE: 200', res.status);
		r = await post(list, { 'Mcp-Session-Id': sid });
		check(r.status === 404, 'after DELETE: 404', r);
		res = await fetch(url, { method: 'DELETE', headers: { 'Mcp-Session-Id': sid, ...authHeaders() } });
		check(res.status === 404, 'DELETE twice: 404', res.status);
		// Notifications without a session; responses from the client.
		r = await post({ jsonrpc: '2.0', method: 'notifications/initialized' });
		check(r.status === 400, 'notification without a session: 400', r);
		const sid2 = await rawSession();
		r = await post({ jsonrpc: '2.0', id: 77, result: {} }, { 'Mcp-Session-Id': sid2 });
		check(r.status === 202 && r.text === '', 'a response from the client: 202', r);
		// Still serving.
		r = await post({ jsonrpc: '2.0', id: 5, method: 'ping' }, { 'Mcp-Session-Id': sid2 });
		check(r.status === 200 && r.json.id === 5, 'still serving', r);
	},

	async stateless() {
		// 2026-07-28: no initialize, no session; the version rides in _meta.
		let r = await post({ jsonrpc: '2.0', id: 1, method: 'server/discover', params: { _meta: META } }, { 'MCP-Protocol-Version': '2026-07-28' });
		check(r.status === 200 && r.json.result.supportedVersions.includes('2026-07-28'), 'server/discover', r);
		check(!r.headers.get('mcp-session-id'), 'no session id handed out', [...r.headers]);
		r = await post({ jsonrpc: '2.0', id: 2, method: 'tools/list', params: { _meta: META } });
		check(r.status === 200 && r.json.result.tools.length >= 7, 'stateless tools/list', r);
		r = await post({ jsonrpc: '2.0', id: 3, method: 'tools/call', params: { _meta: META, name: 'environment_create', arguments: {} } });
		check(r.status === 200 && r.json.result.isError === false, 'stateless create', r);
		const id = r.json.result.structuredContent.environment_id;
		r = await post({ jsonrpc: '2.0', id: 4, method: 'tools/call', params: { _meta: META, name: 'environment_execute', arguments: { environment_id: id, command: 'echo stateless' } } });
		check(r.json.result.structuredContent.stdout === 'stateless\n' && r.json.result.resultType === 'complete', 'stateless execute', r);
		// Plain JSON-RPC dotted methods work without a session too.
		r = await post({ jsonrpc: '2.0', id: 5, method: 'environment.execute', params: { environment_id: id, command: 'echo dotted' } });
		check(r.status === 200 && r.json.result.stdout === 'dotted\n', 'dotted method without a session', r);
		r = await post({ jsonrpc: '2.0', id: 6, method: 'environment.destroy', params: { environment_id: id } });
		check(r.json.result.destroyed === true, 'dotted destroy', r);
		// Without the _meta (and no session) it is refused.
		r = await post({ jsonrpc: '2.0', id: 7, method: 'tools/list', params: {} });
		check(r.status === 400, 'no _meta, no session: 400', r);
	},

	// With --token-file: the token arrives as argv[4].
	async auth() {
		const hdr = { 'Content-Type': 'application/json' };
		const body = JSON.stringify(INIT);
		let res = await fetch(url, { method: 'POST', headers: hdr, body });
		check(res.status === 401 && /^Bearer/.test(res.headers.get('www-authenticate') ?? ''), 'no token: 401 + WWW-Authenticate', res.status);
		res = await fetch(url, { method: 'POST', headers: { ...hdr, Authorization: `Bearer ${token}x` }, body });
		check(res.status === 401, 'wrong token: 401', res.status);
		res = await fetch(url, { method: 'POST', headers: { ...hdr, Authorization: `Bearer ${token.slice(0, -1)}` }, body });
		check(res.status === 401, 'token prefix: 401', res.status);
		res = await fetch(url, { method: 'POST', headers: { ...hdr, Authorization: `Basic ${token}` }, body });
		check(res.status === 401, 'other scheme: 401', res.status);
		res = await fetch(url, { method: 'POST', headers: { ...hdr, Authorization: `Bearer ${token}` }, body });
		check(res.status === 200 && res.headers.get('mcp-session-id'), 'right token: 200', res.status);
		await res.text();
		// The SDK with the token in its headers.
		const { client } = await connect();
		try {
			const l = await ok(client, 'environment_list', {});
			check(Array.isArray(l.environments), 'SDK with a bearer token', l);
		} finally {
			await client.close();
		}
	},

	// Just checks the server answers (used after a test to prove it survived).
	async alive() {
		const r = await post({ jsonrpc: '2.0', id: 1, method: 'server/discover', params: { _meta: META } });
		check(r.status === 200 && r.json.result.serverInfo.name === 'sbx', 'server answers', r);
	},
};

if (!cases[name] || !url) {
	console.error(`usage: node http_test.mjs {${Object.keys(cases).join('|')}} URL [TOKEN]`);
	process.exit(2);
}
let rc = 0;
try {
	await cases[name]();
	console.log(`ok ${name}`);
} catch (e) {
	console.error(e.stack || String(e));
	rc = 1;
}
process.exit(rc);
