// MCP client tests for `sbx mcp`, driven through the official TypeScript SDK
// over stdio. Usage: node sdk_test.mjs CASE (see `cases` below). Needs
// SBX_BIN; SBX_ROOT/SBX_RUN pass through to the server. Exits non-zero with
// a message on the first failed check. Every case destroys what it creates.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { McpError } from '@modelcontextprotocol/sdk/types.js';

const EXPECTED_TOOLS = [
	'environment_attest',
	'environment_context_create',
	'environment_context_list',
	'environment_context_remove',
	'environment_context_restart',
	'environment_create',
	'environment_destroy',
	'environment_diff',
	'environment_download',
	'environment_execute',
	'environment_fork',
	'environment_input',
	'environment_inspect',
	'environment_list',
	'environment_list_files',
	'environment_logs',
	'environment_pause',
	'environment_phase',
	'environment_process_kill',
	'environment_process_list',
	'environment_process_output',
	'environment_process_wait',
	'environment_read_file',
	'environment_replay',
	'environment_restore',
	'environment_resume',
	'environment_run_code',
	'environment_screenshot',
	'environment_snapshot',
	'environment_upload',
	'environment_write_file',
	'pool_list',
	'pool_set',
	'snapshot_export',
	'snapshot_import',
	'snapshot_list',
	'snapshot_pull',
	'snapshot_push',
	'template_build',
	'template_list',
];

function check(cond, msg, extra) {
	if (!cond) {
		throw new Error(`check failed: ${msg}${extra === undefined ? '' : `: ${JSON.stringify(extra)}`}`);
	}
}

async function connect() {
	const transport = new StdioClientTransport({
		command: process.env.SBX_BIN,
		args: ['mcp'],
		env: { ...process.env },
		stderr: 'inherit',
	});
	const client = new Client({ name: 'sbx-tests', version: '1.0.0' });
	await client.connect(transport);
	return client;
}

async function call(client, name, args, opts) {
	return client.callTool({ name, arguments: args }, undefined, opts);
}

// A successful call: returns structuredContent, checking the text item mirrors it.
async function ok(client, name, args, opts) {
	const r = await call(client, name, args, opts);
	check(!r.isError, `${name} should succeed`, r);
	check(r.structuredContent && typeof r.structuredContent === 'object', `${name}: structuredContent`, r);
	check(r.content?.[0]?.type === 'text', `${name}: text content item`, r);
	check(
		JSON.stringify(JSON.parse(r.content[0].text)) === JSON.stringify(r.structuredContent),
		`${name}: text content is the same JSON as structuredContent`,
		r,
	);
	return r.structuredContent;
}

async function toolError(client, name, args) {
	const r = await call(client, name, args);
	check(r.isError === true, `${name} should be a tool error (isError)`, r);
	const e = r.structuredContent?.error;
	check(e && typeof e.code === 'string' && typeof e.message === 'string', `${name}: error {code,message}`, r);
	return e;
}

async function protocolError(promise, code, what) {
	try {
		const r = await promise;
		throw new Error(`check failed: ${what} should be a JSON-RPC error ${code}, got ${JSON.stringify(r)}`);
	} catch (e) {
		if (!(e instanceof McpError)) throw e;
		check(e.code === code, `${what}: error code ${code}`, { code: e.code, message: e.message });
		return e;
	}
}

async function withEnv(client, fn, args = {}) {
	const env = await ok(client, 'environment_create', args);
	check(/^[0-9a-f]{12}$/.test(env.environment_id), 'environment_id is 12 hex digits', env);
	check(/^sha256:[0-9a-f]{64}$/.test(env.snapshot_id), 'snapshot_id is its base snapshot', env);
	check(typeof env.create_ms === 'number', 'create_ms is a number', env);
	try {
		return await fn(env.environment_id);
	} finally {
		await call(client, 'environment_destroy', { environment_id: env.environment_id }).catch(() => {});
	}
}

const cases = {
	async tools_list(client) {
		const info = client.getServerVersion();
		check(info?.name === 'sbx', 'serverInfo.name', info);
		check(client.getServerCapabilities()?.tools, 'tools capability', client.getServerCapabilities());
		check(typeof client.getInstructions() === 'string', 'instructions');
		const { tools } = await client.listTools();
		const names = tools.map((t) => t.name).sort();
		check(JSON.stringify(names) === JSON.stringify(EXPECTED_TOOLS), 'tool names', names);
		for (const t of tools) {
			check(/^[a-zA-Z0-9_-]+$/.test(t.name), 'tool name charset', t.name);
			check(t.description && t.description.length > 40, `${t.name}: description`, t.description);
			check(t.inputSchema?.type === 'object', `${t.name}: inputSchema is an object schema`, t.inputSchema);
			check(t.outputSchema?.type === 'object', `${t.name}: outputSchema is an object schema`, t.outputSchema);
			const a = t.annotations;
			for (const k of ['readOnlyHint', 'destructiveHint', 'idempotentHint', 'openWorldHint'])
				check(typeof a?.[k] === 'boolean', `${t.name}: annotations.${k}`, a);
		}
		const byName = Object.fromEntries(tools.map((t) => [t.name, t]));
		check(byName.environment_list.annotations.readOnlyHint === true, 'environment_list is read-only');
		check(byName.environment_destroy.annotations.destructiveHint === true, 'destroy is destructive');
		check('snapshot' in byName.environment_create.inputSchema.properties, 'create takes a snapshot (fork)');
		check(byName.environment_restore.annotations.destructiveHint === true, 'restore is destructive');
		check(byName.snapshot_list.annotations.readOnlyHint === true, 'snapshot_list is read-only');
		check(byName.environment_execute.inputSchema.required.includes('environment_id'), 'execute requires id');
	},

	async snapshots(client) {
		await withEnv(client, async (id) => {
			await ok(client, 'environment_write_file', { environment_id: id, path: '/root/state.txt', content: 'v1\n' });
			const snap = await ok(client, 'environment_snapshot', { environment_id: id, label: 'mcp-v1' });
			check(/^sha256:[0-9a-f]{64}$/.test(snap.snapshot_id), 'snapshot_id is a digest', snap);
			check(snap.new_bytes > 0 && typeof snap.snapshot_ms === 'number' && snap.files > 0, 'snapshot fields', snap);
			await ok(client, 'environment_execute', { environment_id: id, command: 'echo v2 > /root/state.txt; touch /root/extra' });
			const list = await ok(client, 'snapshot_list', {});
			check(list.snapshots.some((s) => s.snapshot_id === snap.snapshot_id && s.label === 'mcp-v1'), 'listed with its label', list);
			const rs = await ok(client, 'environment_restore', { environment_id: id, snapshot_id: 'mcp-v1' });
			check(rs.environment_id === id && rs.snapshot_id === snap.snapshot_id, 'restore result', rs);
			let r = await ok(client, 'environment_execute', { environment_id: id, command: 'cat /root/state.txt; ls /root' });
			check(r.stdout === 'v1\nstate.txt\n', 'restored exactly', r);
			const again = await ok(client, 'environment_snapshot', { environment_id: id });
			check(again.new_bytes === 0, 'an unchanged environment adds no bytes', again);
			const fork = await ok(client, 'environment_create', { snapshot: snap.snapshot_id });
			check(fork.snapshot_id === snap.snapshot_id, 'fork reports its base', fork);
			try {
				r = await ok(client, 'environment_execute', { environment_id: fork.environment_id, command: 'cat /root/state.txt' });
				check(r.stdout === 'v1\n', 'fork sees the snapshot', r);
			} finally {
				await ok(client, 'environment_destroy', { environment_id: fork.environment_id });
			}
			const e = await toolError(client, 'environment_restore', { environment_id: id, snapshot_id: 'no-such-label' });
			check(e.code === 'not_found' && e.message.includes('snapshot_list'), 'unknown snapshot names what to call', e);
		});
	},

	async diff(client) {
		await withEnv(client, async (id) => {
			await ok(client, 'environment_execute', {
				environment_id: id,
				command: 'echo new > /root/added.txt; echo changed > /etc/hostname; rm -f /etc/motd; mkdir -p /opt/newdir',
			});
			let d = await ok(client, 'environment_diff', { environment_id: id });
			check(d.added.includes('/root/added.txt') && d.added.includes('/opt/newdir'), 'diff: added', d);
			check(d.modified.includes('/etc/hostname'), 'diff: modified', d);
			check(d.deleted.includes('/etc/motd'), 'diff: deleted', d);
			for (const k of ['added', 'modified', 'deleted'])
				check(JSON.stringify([...d[k]].sort()) === JSON.stringify(d[k]), `diff: ${k} sorted`, d);
			const snap = await ok(client, 'environment_snapshot', { environment_id: id });
			await ok(client, 'environment_execute', { environment_id: id, command: 'rm /root/added.txt; echo 2 > /root/two' });
			d = await ok(client, 'environment_diff', { environment_id: id, snapshot_id: snap.snapshot_id });
			check(
				JSON.stringify(d.added) === '["/root/two"]' && JSON.stringify(d.deleted) === '["/root/added.txt"]' && d.modified.length === 0,
				'diff against a snapshot',
				d,
			);
			// an xattr is kept by the snapshot: its change is a modification (sbx diff's answer too)
			const x = await ok(client, 'environment_execute', {
				environment_id: id,
				command: `python3 -c "import os; os.setxattr('/etc/hostname', 'user.k', b'v')"`,
			});
			check(x.exit_code === 0, 'setxattr inside', x);
			d = await ok(client, 'environment_diff', { environment_id: id, snapshot_id: snap.snapshot_id });
			check(JSON.stringify(d.modified) === '["/etc/hostname"]', 'diff: an xattr change is a modification', d);
			const e = await toolError(client, 'environment_diff', { environment_id: id, snapshot_id: 'no-such-label' });
			check(e.code === 'not_found' && e.message.includes('snapshot_list'), 'diff: unknown snapshot', e);
			const { tools } = await client.listTools();
			const t = tools.find((x) => x.name === 'environment_diff');
			check(t.annotations.readOnlyHint === true && t.annotations.idempotentHint === true, 'diff annotations', t);
		});
		const e = await toolError(client, 'environment_diff', { environment_id: 'nosuchenv' });
		check(e.code === 'not_found', 'diff: unknown environment', e);
	},

	async resources(client) {
		check(client.getServerCapabilities()?.resources, 'resources capability', client.getServerCapabilities());
		await withEnv(client, async (id) => {
			await ok(client, 'environment_write_file', { environment_id: id, path: '/root/r.txt', content: 'r\n' });
			const snap = await ok(client, 'environment_snapshot', { environment_id: id, label: 'mcp-res' });
			const uri = `sbx://snapshots/${snap.snapshot_id}`;
			const { resources } = await client.listResources();
			const r = resources.find((x) => x.uri === uri);
			check(r && r.name === 'mcp-res' && r.mimeType === 'application/json', 'listed snapshot resource', resources);
			const read = await client.readResource({ uri });
			check(read.contents.length === 1 && read.contents[0].uri === uri, 'read: one content item', read);
			const man = JSON.parse(read.contents[0].text);
			check(man.snapshot_id === snap.snapshot_id && Array.isArray(man.layers) && man.layers.length > 0, 'read: the manifest', man);
			check(man.labels.includes('mcp-res'), 'manifest labels', man);
			const { resourceTemplates } = await client.listResourceTemplates();
			check(resourceTemplates.some((t) => t.uriTemplate === 'sbx://snapshots/{snapshot_id}'), 'resource template', resourceTemplates);
			const err = await protocolError(client.readResource({ uri: 'sbx://snapshots/sha256:' + '0'.repeat(64) }), -32002, 'unknown resource');
			check(/not found/i.test(err.message), 'resource not found message', err.message);
			await protocolError(client.readResource({ uri: 'file:///etc/passwd' }), -32002, 'foreign uri');
		});
	},

	async trace_replay(client) {
		await withEnv(client, async (id) => {
			const prog = 'import random, time, os; print(random.random(), time.time(), os.urandom(4).hex(), os.getpid())';
			const r = await ok(client, 'environment_execute', { environment_id: id, argv: ['python3', '-c', prog], trace: true });
			check(r.exit_code === 0 && typeof r.trace_id === 'string' && r.trace_id.startsWith('sha256:'), 'execute with trace gives trace_id', r);
			const untraced = await ok(client, 'environment_execute', { environment_id: id, command: 'true' });
			check(untraced.trace_id === null, 'no trace_id without trace', untraced);
			const rep = await ok(client, 'environment_replay', { trace_id: r.trace_id });
			check(rep.verdict === 'match' && typeof rep.replay_ms === 'number', 'replay of a deterministic run matches', rep);
			// The dotted alias as a plain JSON-RPC method is covered by the raw tests; here the tool alias.
			const rep2 = await ok(client, 'environment.replay', { trace_id: r.trace_id.slice(7, 19) });
			check(rep2.verdict === 'match', 'replay by prefix through the dotted alias', rep2);
			// A run that reads a source the engine cannot control diverges, and says where.
			const bad = await ok(client, 'environment_execute', { environment_id: id, command: 'cat /proc/self/schedstat', trace: true });
			const d = await ok(client, 'environment_replay', { trace_id: bad.trace_id });
			check(d.verdict === 'diverged' && d.divergence.kind === 'stdout' && typeof d.divergence.expected === 'string', 'nondeterministic run diverges', d);
			// Traces are resources: the manifest and the events.
			const { resources } = await client.listResources();
			check(resources.some((x) => x.uri === `sbx://traces/${r.trace_id}`), 'trace listed as a resource', resources);
			const man = JSON.parse((await client.readResource({ uri: `sbx://traces/${r.trace_id}` })).contents[0].text);
			check(man.trace_id === r.trace_id && man.snapshot_id.startsWith('sha256:') && man.events.lost === 0, 'trace manifest', man);
			const ev = await client.readResource({ uri: `sbx://traces/${r.trace_id}/events` });
			check(ev.contents[0].mimeType === 'text/plain' && ev.contents[0].text.includes('python3'), 'trace events as text', ev.contents[0].text.slice(0, 200));
			const e = await toolError(client, 'environment_replay', { trace_id: 'sha256:' + '0'.repeat(64) });
			check(e.code === 'not_found', 'unknown trace: not_found', e);
		});
	},

	async lifecycle(client) {
		let id;
		await withEnv(client, async (envId) => {
			id = envId;
			const list = await ok(client, 'environment_list', {});
			check(list.environments.some((e) => e.environment_id === id), 'environment_list shows it', list);

			let r = await ok(client, 'environment_execute', { environment_id: id, command: 'echo hi' });
			check(r.exit_code === 0 && r.stdout === 'hi\n' && r.stderr === '', 'echo hi', r);
			check(r.timed_out === false && typeof r.duration_ms === 'number', 'echo hi: timing fields', r);

			r = await ok(client, 'environment_execute', { environment_id: id, command: 'echo oops >&2; exit 3' });
			check(r.exit_code === 3 && r.stderr === 'oops\n', 'exit 3 is a successful call', r);

			r = await ok(client, 'environment_execute', { environment_id: id, argv: ['printf', '%s-%s', 'a b', 'c'] });
			check(r.stdout === 'a b-c', 'argv runs without a shell', r);

			r = await ok(client, 'environment_execute', {
				environment_id: id,
				command: 'cat; echo " $FOO"; pwd',
				stdin: 'fed',
				env: { FOO: 'bar' },
				cwd: '/tmp',
			});
			check(r.stdout === 'fed bar\n/tmp\n', 'stdin, env and cwd', r);

			const t0 = Date.now();
			r = await ok(client, 'environment_execute', { environment_id: id, command: 'sleep 10', timeout_ms: 500 });
			check(r.timed_out === true && r.exit_code === null, 'timeout: timed_out and exit_code null', r);
			check(Date.now() - t0 < 5000, 'timeout returns promptly');

			// Files.
			r = await ok(client, 'environment_write_file', { environment_id: id, path: '/root/hello.txt', content: 'héllo\n' });
			check(r.bytes_written === 7, 'bytes_written counts bytes', r);
			r = await ok(client, 'environment_read_file', { environment_id: id, path: '/root/hello.txt' });
			check(r.content === 'héllo\n' && r.encoding === 'utf8' && r.size === 7 && r.truncated === false, 'read back', r);
			r = await ok(client, 'environment_execute', { environment_id: id, command: 'cat /root/hello.txt' });
			check(r.stdout === 'héllo\n', 'the command sees the written file', r);
			const bin = Buffer.from([0, 1, 2, 255, 254, 10]);
			r = await ok(client, 'environment_write_file', {
				environment_id: id,
				path: 'bin.dat',
				content: bin.toString('base64'),
				encoding: 'base64',
				mode: 0o600,
			});
			check(r.bytes_written === 6, 'binary bytes_written', r);
			r = await ok(client, 'environment_read_file', { environment_id: id, path: '/root/bin.dat', encoding: 'base64' });
			check(Buffer.from(r.content, 'base64').equals(bin), 'binary round trip', r);
			r = await ok(client, 'environment_read_file', { environment_id: id, path: '/root/hello.txt', max_bytes: 2 });
			check(r.truncated === true && r.size === 7 && r.content === 'h', 'max_bytes cuts at a character boundary', r);
			const e = await toolError(client, 'environment_read_file', { environment_id: id, path: '/root/bin.dat' });
			check(e.code === 'invalid_argument' && e.message.includes('base64'), 'binary as utf8 says use base64', e);
			r = await ok(client, 'environment_list_files', { environment_id: id, path: '/root' });
			const names = r.entries.map((x) => x.name);
			check(names.includes('hello.txt') && names.includes('bin.dat'), 'list_files shows the files', r);
			const ent = r.entries.find((x) => x.name === 'bin.dat');
			check(ent.type === 'file' && ent.size === 6, 'list_files entry fields', ent);
			const nf = await toolError(client, 'environment_read_file', { environment_id: id, path: '/root/nope' });
			check(nf.code === 'not_found', 'missing file is not_found', nf);
		});
		const r = await ok(client, 'environment_list', {});
		check(!r.environments.some((e) => e.environment_id === id), 'destroyed environment is gone', r);
		const e = await toolError(client, 'environment_execute', { environment_id: id, command: 'true' });
		check(e.code === 'not_found', 'execute after destroy: not_found', e);
	},

	async errors(client) {
		let e = await toolError(client, 'environment_execute', { environment_id: 'nosuchenv', command: 'true' });
		check(e.code === 'not_found', 'unknown environment: not_found', e);
		check(e.message.includes('environment_list') && e.message.includes('nosuchenv'), 'message says what to do', e);
		e = await toolError(client, 'environment_destroy', { environment_id: 'nosuchenv' });
		check(e.code === 'not_found', 'destroy unknown: not_found', e);

		e = await protocolError(call(client, 'no_such_tool', {}), -32602, 'unknown tool');
		check(/unknown tool/i.test(e.message), 'unknown tool message', e.message);
		// Arguments that do not fit the schema: a tool error the model can
		// correct (MCP 2025-11-25), invalid_argument naming the field.
		e = await toolError(client, 'environment_execute', { environment_id: 'x', command: 'true', timeout_ms: 'soon' });
		check(e.code === 'invalid_argument' && e.message.includes('timeout_ms'), 'message names the field', e);
		e = await toolError(client, 'environment_execute', { environment_id: 5, command: 'true' });
		check(e.code === 'invalid_argument' && e.message.includes('environment_id'), 'message names environment_id', e);
		e = await toolError(client, 'environment_execute', { command: 'true' });
		check(e.code === 'invalid_argument' && e.message.includes('environment_id'), 'message names the missing field', e);
		e = await toolError(client, 'environment_execute', { environment_id: 'x' });
		check(e.code === 'invalid_argument' && e.message.includes('command'), 'message asks for command or argv', e);
		e = await toolError(client, 'environment_create', { limits: { memory_bytes: '1g' } });
		check(e.code === 'invalid_argument' && e.message.includes('limits.memory_bytes'), 'message names the nested field', e);
		e = await toolError(client, 'environment_create', { bogus: 1 });
		check(e.code === 'invalid_argument', 'unknown argument', e);
		check(e.message.includes('bogus'), 'message names the unknown argument', e.message);
		e = await toolError(client, 'environment_create', { snapshot: 'sha256:00' });
		check(e.code === 'not_found' && e.message.includes('snapshot_list'), 'unknown snapshot: not_found, with what to call', e);
		e = await toolError(client, 'environment_create', { template: 'nonsense' });
		check(e.code === 'not_found' || e.code === 'invalid_argument', 'bad template', e);
		e = await toolError(client, 'environment_create', { network: 'sometimes' });
		check(e.code === 'invalid_argument' && e.message.includes('none'), 'bad network mode names the valid ones', e);
		e = await toolError(client, 'environment_create', { network: { allow: ['*'] } });
		check(e.code === 'invalid_argument' && e.message.includes('allow'), 'too broad an allowlist is refused', e);
		e = await toolError(client, 'environment_create', { network: { allow: [3] } });
		check(e.code === 'invalid_argument', 'non-string pattern refused', e);
		// internet: the egress proxy to every public host; a name resolving to
		// an internal address is refused by it, with the reason.
		await withEnv(client, async (id) => {
			const x = await ok(client, 'environment_execute', {
				environment_id: id,
				command: 'echo "$HTTPS_PROXY"; curl -s --max-time 10 --noproxy "" -x "$HTTP_PROXY" http://localhost:1/ || true',
			});
			check(x.stdout.includes('127.0.0.1:3128') && x.stdout.includes('internal address'), 'network internet is the proxy, internal addresses refused', x);
		}, { network: 'internet' });
		// Dotted alias through tools/call.
		const r = await ok(client, 'environment.list', {});
		check(Array.isArray(r.environments), 'dotted alias in tools/call', r);
	},

	async cancel(client) {
		await withEnv(client, async (id) => {
			const ac = new AbortController();
			const t0 = Date.now();
			const p = call(client, 'environment_execute', { environment_id: id, command: 'sleep 30' }, { signal: ac.signal });
			setTimeout(() => ac.abort('test cancels'), 700);
			let threw = false;
			try {
				await p;
			} catch {
				threw = true;
			}
			check(threw, 'aborted call rejects');
			check(Date.now() - t0 < 5000, 'cancel returns quickly', Date.now() - t0);
			// The environment stays usable and the sleep is gone.
			const deadline = Date.now() + 5000;
			let r;
			do {
				r = await ok(client, 'environment_execute', {
					environment_id: id,
					command: 'for p in /proc/[0-9]*; do cat $p/cmdline 2>/dev/null | tr "\\0" " "; echo; done',
				});
				if (!r.stdout.includes('sleep 30')) break;
				await new Promise((res) => setTimeout(res, 200));
			} while (Date.now() < deadline);
			check(!r.stdout.includes('sleep 30'), 'the cancelled command was killed', r.stdout);
			r = await ok(client, 'environment_execute', { environment_id: id, command: 'echo still-here' });
			check(r.stdout === 'still-here\n', 'environment usable after cancel', r);
		});
	},

	async progress(client) {
		await withEnv(client, async (id) => {
			const seen = [];
			const r = await ok(
				client,
				'environment_execute',
				{ environment_id: id, command: 'for i in 1 2 3 4 5 6; do echo line$i; sleep 0.2; done' },
				{ onprogress: (p) => seen.push(p) },
			);
			check(r.stdout.split('\n').length === 7, 'all output in the result', r);
			check(seen.length >= 2, 'several progress notifications', seen);
			const text = seen.map((p) => p.message ?? '').join('');
			check(text.includes('line1') && text.includes('line3'), 'progress messages carry the output', seen);
			for (let i = 1; i < seen.length; i++) check(seen[i].progress > seen[i - 1].progress, 'progress increases', seen);
		});
	},

	// The code interpreter (docs/code.md): needs python3 with ipykernel and
	// matplotlib on the host (test_mcp.sh skips without them).
	async code(client) {
		await withEnv(client, async (id) => {
			const run = (code, extra = {}, opts = { timeout: 120000 }) =>
				ok(client, 'environment_run_code', { environment_id: id, code, ...extra }, opts);
			let r = await run('x = 41');
			check(r.results.length === 0 && typeof r.context_id === 'string', 'an assignment has no result', r);
			r = await run('x + 1');
			check(r.results[0]?.text === '42' && r.results[0].is_main_result === true, 'state kept across calls', r);
			check(typeof r.execution_count === 'number' && r.execution_count >= 2, 'execution_count', r);
			// a plot: base64 PNG in results, and an image content item a client shows
			const raw = await call(
				client,
				'environment_run_code',
				{ environment_id: id, code: 'import matplotlib.pyplot as plt\nplt.plot([1, 3, 2]); plt.show()' },
				{ timeout: 120000 },
			);
			check(!raw.isError && raw.content[0].type === 'text', 'plot: a text item first', raw.content?.[0]);
			const img = raw.content.find((c) => c.type === 'image');
			check(img && img.mimeType === 'image/png', 'plot: an image content item', raw.content.map((c) => c.type));
			check(Buffer.from(img.data, 'base64').subarray(0, 8).toString('hex') === '89504e470d0a1a0a', 'plot: PNG signature');
			check(raw.structuredContent.results.some((x) => x.png === img.data), 'plot: the same PNG in results');
			// an exception is a successful call with error {name, value, traceback}
			r = await run('1/0');
			check(r.error?.name === 'ZeroDivisionError' && r.error.traceback.includes('division by zero'), 'error', r);
			// contexts: create, run in it (its own state), list, remove
			const c = await ok(client, 'environment_context_create', { environment_id: id, cwd: '/tmp' });
			check(typeof c.context_id === 'string' && c.language === 'python' && c.cwd === '/tmp', 'context create', c);
			r = await run('import os; x = 7; os.getcwd()', { context_id: c.context_id });
			check(r.context_id === c.context_id && r.results[0]?.text === "'/tmp'", 'run in the context', r);
			let l = await ok(client, 'environment_context_list', { environment_id: id });
			check(l.contexts.some((x) => x.context_id === c.context_id), 'context listed', l);
			const rs = await ok(client, 'environment_context_restart', { environment_id: id, context_id: c.context_id });
			check(rs.context_id === c.context_id && rs.restarted === true, 'context restart', rs);
			r = await run('x', { context_id: c.context_id });
			check(r.error?.name === 'NameError', 'a restarted context has lost its state', r);
			const rm = await ok(client, 'environment_context_remove', { environment_id: id, context_id: c.context_id });
			check(rm.context_id === c.context_id && rm.removed === true, 'context remove', rm);
			l = await ok(client, 'environment_context_list', { environment_id: id });
			check(!l.contexts.some((x) => x.context_id === c.context_id), 'context gone', l);
			const e = await toolError(client, 'environment_run_code', { environment_id: id, code: '1', context_id: c.context_id });
			check(e.code === 'not_found', 'a removed context is not_found', e);
			// streamed output: a progress notification with the first line before the result
			const seen = [];
			let firstAt = 0;
			const t0 = Date.now();
			r = await run(
				'import time\nprint("first", flush=True)\ntime.sleep(1)\nprint("second")',
				{},
				{
					timeout: 120000,
					onprogress: (p) => {
						seen.push(p);
						if (!firstAt && (p.message ?? '').includes('first')) firstAt = Date.now();
					},
				},
			);
			const doneAt = Date.now();
			check(r.stdout === 'first\nsecond\n', 'all output in the result', r);
			check(firstAt > 0 && doneAt - firstAt >= 700, 'progress with stdout before the result', { seen, t0, firstAt, doneAt });
			const x = await ok(client, 'environment_execute', { environment_id: id, command: 'echo still-works' });
			check(x.stdout === 'still-works\n', 'execute still works', x);
		});
	},

	async concurrency(client) {
		// A slow command in one environment must not hold up work elsewhere.
		await withEnv(client, async (slowId) => {
			const t0 = Date.now();
			const slow = ok(client, 'environment_execute', { environment_id: slowId, command: 'sleep 4; echo slow' });
			let fastDone;
			await withEnv(client, async (id) => {
				const r = await ok(client, 'environment_execute', { environment_id: id, command: 'echo fast' });
				check(r.stdout === 'fast\n', 'fast command', r);
				const r2 = await ok(client, 'environment_execute', { environment_id: slowId, command: 'echo same-env' });
				check(r2.stdout === 'same-env\n', 'second command in the busy environment', r2);
				fastDone = Date.now() - t0;
			});
			const s = await slow;
			check(s.stdout === 'slow\n', 'slow command result', s);
			check(fastDone < 3500, 'create + execute ran while the slow command was running', fastDone);
			// Many at once.
			const many = await Promise.all(
				Array.from({ length: 8 }, (_, i) =>
					ok(client, 'environment_execute', { environment_id: slowId, command: `sleep 1; echo ${i}` }),
				),
			);
			many.forEach((r, i) => check(r.stdout === `${i}\n`, 'parallel result', r));
			check(Date.now() - t0 < 12000, 'parallel calls overlap', Date.now() - t0);
		});
	},

	// Background processes (docs/processes.md): every result is checked by the
	// SDK against the tool's outputSchema.
	async processes(client) {
		await client.listTools(); // the SDK validates results once it knows the schemas
		await withEnv(client, async (id) => {
			const p = await ok(client, 'environment_execute', {
				environment_id: id,
				background: true,
				command: 'echo started; sleep 300',
			});
			check(/^p[0-9]+$/.test(p.process_id) && p.pid > 1, 'background: process_id and pid', p);
			const l = await ok(client, 'environment_process_list', { environment_id: id });
			check(l.processes.length === 1 && l.processes[0].state === 'running', 'listed running', l);
			let o;
			for (let i = 0; i < 50; i++) {
				o = await ok(client, 'environment_process_output', { environment_id: id, process_id: p.process_id });
				if (o.stdout) break;
				await new Promise((r) => setTimeout(r, 100));
			}
			check(o.stdout === 'started\n' && o.stdout_offset === 8 && o.exited === false, 'output so far', o);
			let w = await ok(client, 'environment_process_wait', { environment_id: id, process_id: p.process_id, timeout_ms: 200 });
			check(w.state === 'running', 'still running after the wait', w);
			const k = await ok(client, 'environment_process_kill', { environment_id: id, process_id: p.process_id, signal: 'KILL' });
			check(k.delivered === true && k.signal === 9, 'killed', k);
			w = await ok(client, 'environment_process_wait', { environment_id: id, process_id: p.process_id, timeout_ms: 10000 });
			check(w.state === 'exited' && w.signal === 9 && w.exit_code === null, 'exited by the signal', w);
			const e = await toolError(client, 'environment_process_wait', { environment_id: id, process_id: 'p77' });
			check(e.code === 'not_found', 'unknown process', e);
		});
	},
	// Every listed tool, called once with valid arguments: the SDK checks each
	// structuredContent against the tool's outputSchema (a mismatch throws),
	// and no tool may be left uncalled. Tools that need what this server was
	// not given (a key, a registry, an allowed host directory) must say so
	// with their documented error code.
	async every_tool(client) {
		const tools = (await client.listTools()).tools;
		const seen = new Map();
		const run = async (name, args) => {
			const r = await call(client, name, args, { timeout: 60000 });
			seen.set(name, r);
			check(r.structuredContent && typeof r.structuredContent === 'object', `${name}: structuredContent`, r);
			return r;
		};
		const good = async (name, args) => {
			const r = await run(name, args);
			check(!r.isError, `${name} should succeed`, r);
			return r.structuredContent;
		};
		const refused = async (name, args, code) => {
			const r = await run(name, args);
			check(r.isError && r.structuredContent.error?.code === code, `${name}: ${code}`, r);
		};
		// the code tools need a kernel on the host (python3 with ipykernel): unavailable without one
		const kernel = async (name, args, code) => {
			const r = await run(name, args);
			const got = r.structuredContent.error?.code;
			check(r.isError && (got === code || (got === 'unavailable' && /ipykernel|python3/.test(r.structuredContent.error.message))), `${name}: ${code}`, r);
		};
		const id = (await good('environment_create', { name: 'every-tool' })).environment_id;
		try {
			await good('environment_inspect', { environment_id: id });
			await good('environment_list', {});
			await good('environment_execute', { environment_id: id, command: 'mkdir -p /root/d && echo x > /root/d/f' });
			await good('environment_write_file', { environment_id: id, path: '/root/w', content: 'aGk=', encoding: 'base64' });
			await good('environment_read_file', { environment_id: id, path: '/root/w' });
			await good('environment_list_files', { environment_id: id, path: '/root' });
			const snap = await good('environment_snapshot', { environment_id: id, label: 'every-tool' });
			await good('environment_diff', { environment_id: id });
			await good('environment_restore', { environment_id: id, snapshot_id: snap.snapshot_id });
			await good('snapshot_list', {});
			const dl = await good('environment_download', { environment_id: id, path: '/root/d' });
			await good('environment_upload', { environment_id: id, path: '/root/up', content: dl.content });
			await refused('environment_logs', { environment_id: id }, 'invalid_argument');
			await good('environment_context_list', { environment_id: id });
			await kernel('environment_context_restart', { environment_id: id, context_id: 'nosuch' }, 'not_found');
			await kernel('environment_context_remove', { environment_id: id, context_id: 'nosuch' }, 'not_found');
			await kernel('environment_run_code', { environment_id: id, code: '1', context_id: 'nosuch' }, 'not_found');
			await kernel('environment_context_create', { environment_id: id, language: 'no-such-language' }, 'invalid_argument');
			await good('template_list', {});
			await good('pool_list', {});
			await good('pool_set', { source: 'host', size: 0 });
			await good('environment_pause', { environment_id: id });
			await good('environment_resume', { environment_id: id });
			await good('environment_phase', { environment_id: id });
			const bg = await good('environment_execute', { environment_id: id, command: 'sleep 30', background: true });
			await good('environment_process_list', { environment_id: id });
			await good('environment_process_output', { environment_id: id, process_id: bg.process_id });
			await good('environment_process_kill', { environment_id: id, process_id: bg.process_id });
			await good('environment_process_wait', { environment_id: id, process_id: bg.process_id, timeout_ms: 10000 });
			// the desktop tools need Xvfb, xdotool and scrot on the host: unavailable without them
			const desk = async (name, args) => {
				const r = await run(name, args);
				const e = r.structuredContent.error;
				check(!r.isError || (e?.code === 'unavailable' && /Xvfb|xdotool|scrot/.test(e.message)), `${name}: works or says what is missing`, r);
				return r;
			};
			const shot = await desk('environment_screenshot', { environment_id: id });
			if (!shot.isError)
				check(shot.content.some((c) => c.type === 'image' && c.mimeType === 'image/png'), 'screenshot: image content', shot.content.map((c) => c.type));
			await desk('environment_input', { environment_id: id, actions: [{ type: 'move', x: 1, y: 1 }] });
			const tr = await good('environment_execute', { environment_id: id, command: 'echo traced', trace: true });
			await good('environment_replay', { trace_id: tr.trace_id });
			await refused('environment_attest', { trace_id: tr.trace_id }, 'unavailable');
			const f = await good('environment_fork', { snapshot_id: snap.snapshot_id });
			await good('environment_destroy', { environment_id: f.environment_id });
			await refused('snapshot_push', { snapshot_id: snap.snapshot_id, ref: '127.0.0.1:1/x:y', insecure: true }, 'unavailable');
			await refused('snapshot_pull', { ref: '127.0.0.1:1/x:y', insecure: true }, 'unavailable');
			await refused('snapshot_export', { snapshot_id: snap.snapshot_id, path: '/tmp' }, 'invalid_argument');
			await refused('snapshot_import', { path: '/tmp' }, 'invalid_argument');
			await refused('template_build', { dockerfile: 'FROM host', context: '/tmp', tag: 'x' }, 'invalid_argument');
		} finally {
			await good('environment_destroy', { environment_id: id });
		}
		const missed = tools.map((t) => t.name).filter((n) => !seen.has(n));
		check(missed.length === 0, 'every listed tool was called', missed);
	},

	// Numbers past int64 (what JSON.stringify makes of 1e20 or 2 ** 64) are
	// refused at once with the request's id; they used to get a parse error
	// with id null, which the SDK cannot match, so the call hung until its
	// timeout. Nothing may be created with such a "limit".
	async huge_numbers(client) {
		const before = (await ok(client, 'environment_list', {})).environments.length;
		for (const args of [{ limits: { memory_bytes: 1e20 } }, { limits: { pids: -(2 ** 64) } }, { limits: { timeout_ms: 2 ** 70 } }]) {
			const t0 = Date.now();
			let err, r;
			try {
				r = await call(client, 'environment_create', args, { timeout: 15000 });
			} catch (e) {
				err = e;
			}
			// -32602, or (2 ** 70 is sent as 1.18e+21, a non-integer) an invalid_argument result
			check(
				(err instanceof McpError && err.code === -32602) || (r?.isError && r.structuredContent?.error?.code === 'invalid_argument'),
				`create ${JSON.stringify(args)}: refused at once`,
				err ? String(err) : r,
			);
			check(Date.now() - t0 < 5000, 'answered at once', Date.now() - t0);
		}
		const after = (await ok(client, 'environment_list', {})).environments.length;
		check(after === before, 'nothing created', { before, after });
	},
};

const name = process.argv[2];
if (!cases[name]) {
	console.error(`usage: node sdk_test.mjs {${Object.keys(cases).join('|')}}`);
	process.exit(2);
}
const client = await connect();
let rc = 0;
try {
	await cases[name](client);
	console.log(`ok ${name}`);
} catch (e) {
	console.error(e.stack || String(e));
	rc = 1;
} finally {
	await client.close();
}
process.exit(rc);
