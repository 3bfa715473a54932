// E2B's official SDK (npm e2b, unchanged) against `sbx serve`: envd's
// process.Process service (sandbox.commands.*, sandbox.pty.*), and raw
// Connect requests that attack the dispatcher.
// Usage: node commands.mjs CASE, with E2B_API_URL, E2B_SANDBOX_URL and
// E2B_API_KEY pointing at the server. Exits non-zero with a message on the
// first failed check. Every case kills what it creates.
import { readFileSync } from 'node:fs';
import { CommandExitError, Sandbox, SandboxError, TimeoutError } from 'e2b';

const [name] = process.argv.slice(2);
const url = process.env.E2B_SANDBOX_URL;
const created = [];

function check(cond, msg, extra) {
	if (!cond) {
		throw new Error(`check failed: ${msg}${extra === undefined ? '' : `: ${JSON.stringify(extra)}`}`);
	}
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function create(opts) {
	const s = await Sandbox.create(opts);
	created.push(s);
	return s;
}

async function until(what, fn, ms = 10000) {
	const end = Date.now() + ms;
	for (;;) {
		const v = await fn();
		if (v) return v;
		if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
		await sleep(50);
	}
}

// One envelope of Connect's streaming format.
function envelope(flags, json) {
	const body = Buffer.from(typeof json === 'string' ? json : JSON.stringify(json));
	const b = Buffer.alloc(5 + body.length);
	b[0] = flags;
	b.writeUInt32BE(body.length, 1);
	body.copy(b, 5);
	return b;
}

// The envelopes of a streaming response body.
function envelopes(buf) {
	const out = [];
	let off = 0;
	while (off + 5 <= buf.length) {
		const n = buf.readUInt32BE(off + 1);
		out.push({ flags: buf[off], json: JSON.parse(buf.subarray(off + 5, off + 5 + n).toString()) });
		off += 5 + n;
	}
	check(off === buf.length, 'the response is whole envelopes', buf.length);
	return out;
}

async function rpc(s, path, body, { token = s.envdAccessToken, id = s.sandboxId, type = 'application/json', headers = {} } = {}) {
	const h = { 'E2b-Sandbox-Id': id, 'E2b-Sandbox-Port': '49983', 'Content-Type': type, ...headers };
	if (token) h['X-Access-Token'] = token;
	const r = await fetch(`${url}${path}`, { method: 'POST', headers: h, body });
	return { status: r.status, type: r.headers.get('content-type'), body: Buffer.from(await r.arrayBuffer()) };
}

const cases = {
	async run() {
		const s = await create();
		const r = await s.commands.run('echo out; echo err >&2; printf "no newline"');
		check(r.exitCode === 0, 'exit code 0', r);
		check(r.stdout === 'out\nno newline', 'stdout', r);
		check(r.stderr === 'err\n', 'stderr', r);
		let e;
		try {
			await s.commands.run('echo before; exit 7');
		} catch (x) {
			e = x;
		}
		check(e instanceof CommandExitError, 'a non-zero exit is CommandExitError', String(e));
		check(e.exitCode === 7 && e.stdout === 'before\n', 'its exit code and output', { code: e.exitCode, out: e.stdout });
		// envd's end event carries Go's exec error text: the error's message
		check(e.error === 'exit status 7' && e.message === 'exit status 7', "its error is envd's 'exit status 7'",
			{ error: e.error, message: e.message });
		// binary output comes through unchanged (bytes, not text)
		const b = await s.commands.run("printf '\\x00\\x01\\xff' | od -An -tx1");
		check(b.stdout.trim() === '00 01 ff', 'bytes through a pipe', b.stdout);
		// envs, cwd (relative to the home), and the user's environment
		const v = await s.commands.run('echo "$A|$B|$(pwd)"', { envs: { A: 'x y', B: 'a=b' }, cwd: '/tmp' });
		check(v.stdout === 'x y|a=b|/tmp\n', 'envs and cwd', v.stdout);
		await s.commands.run('mkdir -p ~/sub');
		const rel = await s.commands.run('pwd', { cwd: 'sub' });
		check(rel.stdout.trim().endsWith('/sub') && rel.stdout.startsWith('/'), 'a relative cwd is under the home', rel.stdout);
		// pids are the processes' own, inside the sandbox
		const pp = await s.commands.run('echo $$', { background: true });
		const pr = await pp.wait();
		check(Number(pr.stdout) === pp.pid, "the pid is the process's inside", { pid: pp.pid, out: pr.stdout });
		// a command that cannot start is the call's error (envd's invalid_argument for a cwd)
		let ce;
		try {
			await s.commands.run('pwd', { cwd: '/nonexistent' });
		} catch (x) {
			ce = x;
		}
		check(ce && ce.name === 'InvalidArgumentError' && /nonexistent/.test(ce.message), 'a missing cwd: InvalidArgumentError', String(ce));
		// a user that does not exist here runs as root (envd's default user comes later)
		const u = await s.commands.run('id -u', { user: 'user' });
		check(/^\d+\n$/.test(u.stdout), 'user: the command runs', u.stdout);
	},

	async stream() {
		const s = await create();
		const got = [];
		const r = await s.commands.run('for i in 1 2 3; do echo $i; sleep 0.2; done; echo e >&2', {
			onStdout: (d) => got.push(['o', d, Date.now()]),
			onStderr: (d) => got.push(['e', d, Date.now()]),
		});
		check(r.exitCode === 0, 'exit 0', r);
		const out = got.filter((x) => x[0] === 'o').map((x) => x[1]).join('');
		check(out === '1\n2\n3\n', 'onStdout saw every line in order', got);
		check(got.length >= 4 && got[got.length - 1][0] === 'e', 'stderr last', got);
		const first = got[0][2], last = got.filter((x) => x[0] === 'o').pop()[2];
		check(last - first >= 300, 'output streamed as it came, not at the end', got);
		// a quiet stream gets keepalive messages at Keepalive-Ping-Interval, after start
		const r2 = await rpc(s, '/process.Process/Start', envelope(0, { process: { cmd: '/bin/sh', args: ['-c', 'echo a; sleep 2.6; echo b'] } }), {
			type: 'application/connect+json',
			headers: { 'Keepalive-Ping-Interval': '1' },
		});
		const ev = envelopes(r2.body).map((e) => e.json.event && Object.keys(e.json.event)[0]);
		check(ev[0] === 'start', 'start first', ev);
		const ka = ev.filter((k) => k === 'keepalive').length;
		check(ka >= 1 && ka <= 3, 'keepalives while quiet', ev);
		check(ev.indexOf('keepalive') > ev.indexOf('data'), 'between the outputs', ev);
	},

	// kill() answers once the process is gone: list() right after it no
	// longer shows it, and its pid no longer exists in the sandbox (the
	// example agent loop checks this with no wait in between).
	async kill_is_final() {
		const s = await create();
		for (let i = 0; i < 10; i++) {
			const h = await s.commands.run('sleep 600', { background: true });
			check(await s.commands.kill(h.pid), 'kill() answers true', i);
			const left = (await s.commands.list()).filter((p) => p.pid === h.pid);
			check(left.length === 0, 'list() right after kill() does not show it', { i, left });
		}
		const h = await s.commands.run('sleep 600', { background: true });
		check(await s.commands.kill(h.pid), 'kill() answers true');
		let e;
		try {
			await s.commands.run(`kill -0 ${h.pid}`);
		} catch (x) {
			e = x;
		}
		check(e instanceof CommandExitError, 'the killed pid is gone from the sandbox', String(e));
	},

	async background() {
		const s = await create();
		const h = await s.commands.run('echo started; sleep 30', { background: true });
		check(h.pid > 0, 'a pid', h.pid);
		const listed = await until('the process in list()', async () => (await s.commands.list()).find((p) => p.pid === h.pid));
		check(listed.cmd === '/bin/bash' && listed.args.includes('echo started; sleep 30'), 'list() shows its command', listed);
		// a second client connects to it and sees its end
		const seen = [];
		const c = await s.commands.connect(h.pid, { onStdout: (d) => seen.push(d), timeoutMs: 0 });
		check(c.pid === h.pid, 'connect(): same pid', c.pid);
		await until('its first output', async () => h.stdout.includes('started'));
		check(await s.commands.kill(h.pid), 'kill() answers true');
		let e;
		try {
			await c.wait();
		} catch (x) {
			e = x;
		}
		check(e instanceof CommandExitError && e.exitCode === -1, 'the killed command ends with -1', String(e));
		check(e.error === 'signal: killed', "its error is envd's 'signal: killed'", e.error);
		await until('the process to leave list()', async () => !(await s.commands.list()).some((p) => p.pid === h.pid));
		check((await s.commands.kill(h.pid)) === false, 'kill() of a gone process answers false');
		let ce;
		try {
			await s.commands.connect(h.pid);
		} catch (x) {
			ce = x;
		}
		check(ce, 'connect() to a gone process fails');
		// killing the sandbox ends its open streams
		const t = await s.commands.run('sleep 60', { background: true, timeoutMs: 0 });
		const t0 = Date.now();
		await s.kill();
		let ke;
		try {
			await t.wait();
		} catch (x) {
			ke = x;
		}
		check(ke, 'a stream of a killed sandbox ends with an error');
		check(Date.now() - t0 < 15000, 'soon after the kill', Date.now() - t0);
	},

	async stdin() {
		const s = await create();
		const h = await s.commands.run('read a; read b; echo "got $a $b"; cat', { background: true, stdin: true });
		await s.commands.sendStdin(h.pid, 'one\n');
		await h.sendStdin('two\nrest\n');
		await s.commands.closeStdin(h.pid);
		const r = await h.wait();
		check(r.stdout === 'got one two\nrest\n', 'stdin reached the command, then EOF', r.stdout);
		// a command started without stdin refuses input
		const n = await s.commands.run('sleep 5', { background: true });
		let e;
		try {
			await s.commands.sendStdin(n.pid, 'x');
		} catch (x) {
			e = x;
		}
		check(e, 'no stdin: sendStdin fails');
		await n.kill();
	},

	async timeout() {
		const s = await create();
		const t0 = Date.now();
		let e;
		try {
			await s.commands.run('sleep 30', { timeoutMs: 1500 });
		} catch (x) {
			e = x;
		}
		check(e instanceof TimeoutError, 'timeoutMs: TimeoutError', String(e));
		check(Date.now() - t0 < 10000, 'ended near its deadline', Date.now() - t0);
		await until('the timed-out process gone', async () => (await s.commands.list()).length === 0);
		// a silent command longer than the keepalive interval still finishes
		const r = await s.commands.run('sleep 2.5; echo done', { timeoutMs: 20000 });
		check(r.stdout === 'done\n', 'a quiet command', r.stdout);
	},

	// The spare login shell (docs/e2b.md "Spare shells"): a command after a
	// pause is served by a bash -l started ahead, and does what a fresh one
	// would: its pid, its output (what the profile printed first), stdin,
	// exit codes, syntax errors, timeouts, kill; a profile changed through
	// the files API is read again.
	async spare() {
		const s = await create();
		// How long the shell running a command has lived, in seconds.
		const age = 'echo "$$ $(cut -d" " -f1 /proc/uptime) $(cut -d" " -f22 /proc/$$/stat) $(getconf CLK_TCK)"';
		const ageOf = (out) => {
			const [pid, up, start, hz] = out.trim().split(' ').map(Number);
			return { pid, age: up - start / hz };
		};
		await s.commands.run('true');
		await sleep(600);
		const h = await s.commands.run(age, { background: true });
		const r = await h.wait();
		const a = ageOf(r.stdout);
		check(a.pid === h.pid, 'the shell is the process the SDK was told of', { out: r.stdout, pid: h.pid });
		check(a.age >= 0.3, 'a command after a pause runs in a shell started ahead', a);
		await sleep(600);
		const v = await s.commands.run('echo "[$BASH_EXECUTION_STRING] $0 $# $-"; declare -p __sbx_c 2>&1 | wc -l');
		check(v.stdout === '[echo "[$BASH_EXECUTION_STRING] $0 $# $-"; declare -p __sbx_c 2>&1 | wc -l] /bin/bash 0 hBc\n1\n',
			'as bash -c: its command, $0, no arguments, no variable of the spare', v.stdout);
		await sleep(600);
		let e;
		try {
			await s.commands.run('echo out; echo err >&2; exit 7');
		} catch (x) {
			e = x;
		}
		check(e instanceof CommandExitError && e.exitCode === 7 && e.stdout === 'out\n' && e.stderr === 'err\n',
			'an exit code and both streams', { e: String(e), out: e?.stdout, err: e?.stderr });
		await sleep(600);
		e = undefined;
		try {
			await s.commands.run('if then');
		} catch (x) {
			e = x;
		}
		check(e instanceof CommandExitError && e.exitCode === 2 && /syntax error/.test(e.stderr), 'a syntax error', e?.stderr);
		// stdin after the command is the command's
		await sleep(600);
		const c = await s.commands.run('cat; ' + age, { background: true, stdin: true });
		await s.commands.sendStdin(c.pid, 'to-cat\n');
		await s.commands.closeStdin(c.pid);
		const cr = await c.wait();
		check(cr.stdout.startsWith('to-cat\n') && ageOf(cr.stdout.split('\n')[1]).age >= 0.3, 'stdin through a spare', cr.stdout);
		// its deadline, and kill
		await sleep(600);
		const t0 = Date.now();
		e = undefined;
		try {
			await s.commands.run('sleep 30', { timeoutMs: 1500 });
		} catch (x) {
			e = x;
		}
		check(e instanceof TimeoutError && Date.now() - t0 < 10000, 'a spare keeps the deadline', String(e));
		await until('the timed-out process gone', async () => (await s.commands.list()).length === 0);
		await s.commands.run('true');
		await sleep(600);
		const k = await s.commands.run('sleep 30', { background: true });
		check((await s.commands.list()).some((p) => p.pid === k.pid && p.args[2] === 'sleep 30'), 'listed with its own command');
		check(await s.commands.kill(k.pid), 'kill');
		check((await s.commands.list()).length === 0, 'gone once killed');
		// A profile written through the files API is read by the next command,
		// and what it prints comes first, once.
		const prof = (await s.commands.run('cat ~/.profile 2>/dev/null || true')).stdout;
		await sleep(600);
		await s.files.write('/home/user/.profile', prof + '\nexport SPARE_MARK=seen\necho profile-said >&2\n');
		const m = await s.commands.run('echo "mark=$SPARE_MARK"');
		check(m.stdout === 'mark=seen\n' && m.stderr === 'profile-said\n', 'a profile changed by files.write', m);
		await sleep(600);
		const m2 = await s.commands.run(age);
		check(m2.stderr === 'profile-said\n' && ageOf(m2.stdout).age >= 0.3, "a spare's profile output, once", m2);
		// a command with envs or another cwd is not the spare's, and drops it
		await sleep(600);
		await s.files.write('/home/user/.profile', prof);
		const n = await s.commands.run('echo "mark=$SPARE_MARK"; ' + age, { envs: { X: '1' } });
		check(n.stdout.startsWith('mark=\n') && ageOf(n.stdout.split('\n')[1]).age < 0.3, 'envs: a fresh shell', n.stdout);
	},

	async pty() {
		const s = await create();
		const chunks = [];
		const dec = new TextDecoder();
		const out = () => chunks.map((c) => dec.decode(c)).join('');
		const p = await s.pty.create({ cols: 91, rows: 27, onData: (d) => chunks.push(d), timeoutMs: 30000 });
		check(p.pid > 0, 'a pid', p.pid);
		await s.pty.sendInput(p.pid, new TextEncoder().encode('stty size; tput cols\n'));
		await until('the pty to show its size', async () => out().includes('27 91'));
		await s.pty.resize(p.pid, { cols: 123, rows: 45 });
		await s.pty.sendInput(p.pid, new TextEncoder().encode('stty size\n'));
		await until('the new size', async () => out().includes('45 123'), 10000);
		await s.pty.sendInput(p.pid, new TextEncoder().encode('tty; echo "T=$TERM"\n'));
		await until('a terminal with TERM', async () => /\/dev\/pts\/\d+/.test(out()) && out().includes('T=xterm-256color'));
		check(await s.pty.kill(p.pid), 'pty.kill() answers true');
		let e;
		try {
			await p.wait();
		} catch (x) {
			e = x;
		}
		check(e instanceof CommandExitError, 'the killed pty ends', String(e));
	},

	// A sandbox killed under a running command: the stream is cut (no
	// end-stream), as when envd's VM goes, so the SDK checks /health, sees
	// 502 and says the sandbox was killed (sandboxKilledDuringRun.test.ts).
	async killed_during_run() {
		const killedMsg = 'sandbox was killed or reached its end of life';
		const s = await create();
		const h = await s.commands.run('sleep 60', { background: true });
		await s.kill();
		const e = await h.wait().catch((x) => x);
		check(e instanceof SandboxError && e.message.includes(killedMsg), 'wait(): the killed message', String(e));
		// a foreground run, the sandbox killed from another client meanwhile
		const f = await create();
		const run = f.commands.run('echo up; sleep 60').catch((x) => x);
		await until('the command to run', async () => (await f.commands.list()).length > 0);
		await Sandbox.kill(f.sandboxId);
		const fe = await run;
		check(fe instanceof SandboxError && fe.message.includes(killedMsg), 'run(): the killed message', String(fe));
	},

	// envd opens stdin when a Start request has no stdin field (handler.go:
	// `req.Stdin == nil || req.GetStdin()`): cat runs on and reads SendInput.
	async stdin_absent() {
		const s = await create();
		const h = { 'E2b-Sandbox-Id': s.sandboxId, 'E2b-Sandbox-Port': '49983', 'Content-Type': 'application/connect+json', 'X-Access-Token': s.envdAccessToken };
		const res = await fetch(`${url}/process.Process/Start`, { method: 'POST', headers: h, body: envelope(0, { process: { cmd: 'cat' } }) });
		const rd = res.body.getReader();
		let buf = Buffer.alloc(0);
		const events = [];
		const next = async (what) => {
			for (;;) {
				while (buf.length >= 5 && buf.length >= 5 + buf.readUInt32BE(1)) {
					const n = buf.readUInt32BE(1);
					const env = { flags: buf[0], json: JSON.parse(buf.subarray(5, 5 + n).toString()) };
					buf = buf.subarray(5 + n);
					events.push(env);
					if (env.flags & 2 || (env.json.event && !env.json.event.keepalive)) return env;
				}
				const { value, done } = await rd.read();
				check(!done, `the stream goes on until ${what}`, events);
				buf = Buffer.concat([buf, Buffer.from(value)]);
			}
		};
		const st = await next('start');
		const pid = st.json.event?.start?.pid;
		check(pid > 0, 'first: start', events);
		await sleep(300);
		check((await s.commands.list()).some((p) => p.pid === pid), 'cat still runs (its stdin is open)');
		const input = JSON.stringify({ process: { pid }, input: { stdin: Buffer.from('hello\n').toString('base64') } });
		const r = await rpc(s, '/process.Process/SendInput', input);
		check(r.status === 200, 'SendInput answers 200', r.body.toString());
		const d = await next('its output');
		check(Buffer.from(d.json.event?.data?.stdout || '', 'base64').toString() === 'hello\n', 'cat echoed the input', events);
		const c = await rpc(s, '/process.Process/CloseStdin', JSON.stringify({ process: { pid } }));
		check(c.status === 200, 'CloseStdin answers 200', c.body.toString());
		const end = await next('its end');
		check(end.json.event?.end, 'cat ended at the end of its stdin', events);
		// stdin: false is closed: cat ends at once
		const r2 = await rpc(s, '/process.Process/Start', envelope(0, { process: { cmd: 'cat' }, stdin: false }), { type: 'application/connect+json' });
		const ev = envelopes(r2.body);
		check(ev.some((e) => e.json.event?.end), 'stdin false: cat ends at once', ev);
	},

	// envd's default variables and files (envVars.test.ts, "default env vars").
	async default_envs() {
		const s = await create();
		const r = await s.commands.run('echo "$E2B_SANDBOX $E2B_SANDBOX_ID"');
		check(r.stdout === `true ${s.sandboxId}\n`, 'E2B_SANDBOX and E2B_SANDBOX_ID', r.stdout);
		const o = await s.commands.run('echo "$E2B_SANDBOX"', { envs: { E2B_SANDBOX: 'mine' } });
		check(o.stdout === 'mine\n', "a request's own envs win", o.stdout);
		const b = await s.commands.run('echo "$E2B_SANDBOX_ID"', { background: true, user: 'root' });
		check((await b.wait()).stdout === `${s.sandboxId}\n`, 'as root, in the background too');
		const f = await s.commands.run('cat /run/e2b/.E2B_SANDBOX; echo; cat /run/e2b/.E2B_SANDBOX_ID');
		check(f.stdout.split('\n')[0].trim() === 'true' && f.stdout.split('\n')[1].trim() === s.sandboxId,
			'/run/e2b/.E2B_SANDBOX and .E2B_SANDBOX_ID', f.stdout);
	},

	// Raw requests: the dispatcher's refusals.
	async attacks() {
		const a = await create();
		const b = await create();
		const start = envelope(0, { process: { cmd: '/bin/true' } });
		const stype = 'application/connect+json';
		// another sandbox's token, no token, a wrong one
		let r = await rpc(a, '/process.Process/List', '{}', { token: b.envdAccessToken });
		check(r.status === 401, "another sandbox's token: 401", r.status);
		r = await rpc(a, '/process.Process/Start', start, { token: '', type: stype });
		check(r.status === 401, 'no token: 401', r.status);
		r = await rpc(a, '/process.Process/List', '{}', { token: 'x'.repeat(64) });
		check(r.status === 401, 'a made-up token: 401', r.status);
		// a process of b is not reachable with a's token
		const hb = await b.commands.run('sleep 30', { background: true });
		r = await rpc(a, '/process.Process/SendSignal', JSON.stringify({ process: { pid: hb.pid }, signal: 'SIGNAL_SIGKILL' }));
		check(r.status === 404 && JSON.parse(r.body).code === 'not_found', "b's pid is not found from a", r.body.toString());
		check((await a.commands.list()).length === 0, "a does not list b's processes");
		check((await b.commands.list()).some((p) => p.pid === hb.pid), 'b still runs it');
		await hb.kill();
		// unknown methods, services, verbs, media types
		r = await rpc(a, '/process.Process/Nope', '{}');
		check(r.status === 501 && JSON.parse(r.body).code === 'unimplemented', 'unknown method: unimplemented', r.body.toString());
		r = await rpc(a, '/process.Process/Nope', envelope(0, {}), { type: stype });
		let ev = envelopes(r.body);
		check(r.status === 200 && ev.length === 1 && ev[0].flags === 2 && ev[0].json.error.code === 'unimplemented', 'unknown streaming method: an end-stream unimplemented', ev);
		r = await rpc(a, '/filesystem.Filesystem/Stat', '{"path":"/"}');
		check(r.status === 200, 'filesystem.Filesystem answers (built)', r.status);
		r = await rpc(a, '/nope.Service/Method', '{}');
		check(r.status >= 400 && r.status < 600 && r.status !== 200, 'unknown service refused', r.status);
		r = await rpc(a, '/process.Process/List', '{}', { type: 'application/proto' });
		check(r.status === 415, 'the binary codec: 415', r.status);
		r = await rpc(a, '/process.Process/List', start, { type: stype });
		check(r.status === 415, 'a unary method as a stream: 415', r.status);
		r = await rpc(a, '/process.Process/Start', '{}');
		check(r.status === 415, 'a streaming method as unary: 415', r.status);
		// malformed messages
		r = await rpc(a, '/process.Process/List', '{not json');
		check(r.status === 400 && JSON.parse(r.body).code === 'invalid_argument', 'malformed JSON: invalid_argument', r.body.toString());
		r = await rpc(a, '/process.Process/SendSignal', '[1,2]');
		check(r.status === 400, 'not an object: 400', r.status);
		r = await rpc(a, '/process.Process/Start', envelope(0, '{"process":'), { type: stype });
		ev = envelopes(r.body);
		check(ev.length === 1 && ev[0].flags === 2 && ev[0].json.error.code === 'invalid_argument', 'a malformed stream message', ev);
		// truncated and oversized envelopes, and a compressed one
		r = await rpc(a, '/process.Process/Start', start.subarray(0, start.length - 3), { type: stype });
		ev = envelopes(r.body);
		check(ev.length === 1 && ev[0].json.error.code === 'invalid_argument', 'a truncated envelope', ev);
		const huge = Buffer.from([0, 0x7f, 0xff, 0xff, 0xff]);
		r = await rpc(a, '/process.Process/Start', huge, { type: stype });
		ev = envelopes(r.body);
		check(ev.length === 1 && ev[0].flags === 2 && ev[0].json.error, 'an envelope announcing 2 GiB', ev);
		r = await rpc(a, '/process.Process/Start', Buffer.concat([start, start]), { type: stype });
		ev = envelopes(r.body);
		check(ev.length === 1 && ev[0].json.error.code === 'invalid_argument', 'two envelopes', ev);
		r = await rpc(a, '/process.Process/Start', Buffer.concat([Buffer.from([1]), start.subarray(1)]), { type: stype });
		ev = envelopes(r.body);
		check(ev.length === 1 && ev[0].json.error, 'a compressed envelope', ev);
		r = await rpc(a, '/process.Process/List', Buffer.alloc(3 << 20, 0x20));
		check(r.status === 413, 'a body over the limit: 413', r.status);
		r = await rpc(a, '/process.Process/List', '{}', { headers: { 'Connect-Timeout-Ms': '-5' } });
		check(r.status === 400, 'a bad Connect-Timeout-Ms: 400', r.status);
		r = await rpc(a, '/process.Process/List', '{}', { headers: { Authorization: 'Basic !!!' } });
		check(r.status === 401 && JSON.parse(r.body).code === 'unauthenticated', 'a bad Authorization: unauthenticated', r.body.toString());
		r = await rpc(a, '/process.Process/Start', envelope(0, { process: { cmd: 'a', envs: { 'A=B': 'c' } } }), { type: stype });
		ev = envelopes(r.body);
		check(ev.length === 1 && ev[0].json.error.code === 'invalid_argument', 'a bad env name', ev);
		// a well-formed raw stream: start, data, end, end-stream
		r = await rpc(a, '/process.Process/Start', envelope(0, { process: { cmd: '/bin/sh', args: ['-c', 'echo raw'] } }), { type: stype });
		ev = envelopes(r.body);
		check(r.type.startsWith('application/connect+json'), 'the stream content type', r.type);
		check(ev[0].json.event.start.pid > 0, 'first: start', ev);
		check(Buffer.from(ev[1].json.event.data.stdout, 'base64').toString() === 'raw\n', 'then data', ev);
		check(ev[ev.length - 2].json.event.end.exitCode === 0 || ev[ev.length - 2].json.event.end.exited, 'then end', ev);
		check(ev[ev.length - 1].flags === 2 && Object.keys(ev[ev.length - 1].json).length === 0, 'last: end-stream {}', ev);
	},

	// Many streams that start and go: no thread or process is left behind.
	async flood() {
		const s = await create();
		const pidOf = (process.env.SBX_SERVE_PID || '').trim();
		const threads = () => (pidOf ? Number((readFileSync(`/proc/${pidOf}/status`, 'utf8').match(/Threads:\s+(\d+)/) || [])[1]) : 0);
		const before = threads();
		// streams the client drops midway
		for (let round = 0; round < 3; round++) {
			const ctrls = [];
			const reqs = [];
			for (let i = 0; i < 20; i++) {
				const c = new AbortController();
				ctrls.push(c);
				const h = { 'E2b-Sandbox-Id': s.sandboxId, 'E2b-Sandbox-Port': '49983', 'Content-Type': 'application/connect+json', 'X-Access-Token': s.envdAccessToken, 'Connect-Timeout-Ms': '3000' };
				reqs.push(
					fetch(`${url}/process.Process/Start`, { method: 'POST', headers: h, body: envelope(0, { process: { cmd: '/bin/sh', args: ['-c', 'echo x; sleep 1'] } }), signal: c.signal })
						.then(async (r) => {
							const rd = r.body.getReader();
							await rd.read();
							c.abort();
						})
						.catch(() => {}),
				);
			}
			await Promise.all(reqs);
		}
		// and many short commands through the SDK at once
		const rs = await Promise.all(Array.from({ length: 30 }, (_, i) => s.commands.run(`echo ${i}`)));
		check(rs.every((r, i) => r.stdout === `${i}\n`), 'every concurrent command got its own output');
		await until('every process to end', async () => (await s.commands.list()).length === 0, 15000);
		const ps = await s.commands.run('ps -e -o pid= | wc -l');
		check(Number(ps.stdout.trim()) <= 5, 'no process left in the sandbox', ps.stdout);
		if (pidOf) {
			await until('the server threads to go back', async () => threads() <= before + 4, 15000).catch(() => {
				throw new Error(`threads: ${before} before, ${threads()} after`);
			});
		}
	},
};

const fn = cases[name];
if (!fn) {
	console.error(`unknown case '${name}'`);
	process.exit(2);
}
try {
	await fn();
	for (const s of created) await s.kill().catch(() => {});
} catch (e) {
	console.error(`${name}: ${e.stack || e}`);
	for (const s of created) await s.kill().catch(() => {});
	process.exit(1);
}
