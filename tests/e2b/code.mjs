// E2B's official @e2b/code-interpreter (2.8.0, unchanged) against `sbx
// serve`: Sandbox.create() with its default template code-interpreter-v1,
// then runCode and the contexts over port 49999 through the front door.
// Usage: node code.mjs CASE, with E2B_API_URL, E2B_SANDBOX_URL and
// E2B_API_KEY pointing at the server. Exits non-zero with a message on the
// first failed check. Every case kills what it creates.
import { Sandbox } from '@e2b/code-interpreter';

const [name] = process.argv.slice(2);
const url = process.env.E2B_SANDBOX_URL;
const created = [];

function check(cond, msg, extra) {
	if (!cond) throw new Error(`check failed: ${msg}${extra === undefined ? '' : `: ${JSON.stringify(extra)}`}`);
}

async function create(opts) {
	const s = await Sandbox.create(opts);
	created.push(s);
	return s;
}

const cases = {
	// State kept across calls, the execution count, stdout streamed as the cell runs.
	async state() {
		const s = await create();
		check((await s.getInfo()).templateId === 'code-interpreter-v1', 'default template');
		let r = await s.runCode('x = 41\nprint("hello")');
		check(r.logs.stdout.join('') === 'hello\n', 'stdout', r.logs);
		check(r.error === undefined, 'no error', r.error);
		r = await s.runCode('x + 1');
		check(r.text === '42', 'state kept: x + 1', r.toJSON());
		check(r.results.length === 1 && r.results[0].isMainResult, 'one main result', r.results);
		check(Number.isInteger(r.executionCount) && r.executionCount >= 2, 'executionCount', r.executionCount);
		// onStdout sees the first line before the cell ends.
		const t0 = Date.now();
		let firstAt = 0;
		const lines = [];
		r = await s.runCode('import time, sys\nprint("a", flush=True)\ntime.sleep(1.5)\nprint("b")', {
			onStdout: (m) => {
				if (!firstAt) firstAt = Date.now();
				lines.push(m.line);
			},
			onStderr: () => {},
		});
		const t1 = Date.now();
		check(lines.join('') === 'a\nb\n', 'onStdout lines', lines);
		check(firstAt && t1 - firstAt >= 1000, 'the first line arrived before the cell ended', { firstAt, t0, t1 });
		r = await s.runCode('import sys; print("err", file=sys.stderr)');
		check(r.logs.stderr.join('') === 'err\n', 'stderr', r.logs);
		// env_vars for this run only
		r = await s.runCode('import os; os.environ.get("FOO")', { envs: { FOO: 'bar' } });
		check(r.text === 'bar', 'envs', r.toJSON());
	},

	// A result's text/plain as E2B's server gives it: one pair of surrounding
	// single quotes stripped (its api/models/result.py), nothing else touched.
	async strings() {
		const s = await create();
		// E2B's own test (js/tests/envVars.test.ts).
		let r = await s.runCode("import os; os.getenv('FOO')", { envs: { FOO: 'bar' } });
		check(r.results[0] && r.results[0].text === 'bar', 'a string without its quotes', r.toJSON());
		const cases = [
			['"it" + "\'s"', '"it\'s"'], // repr in double quotes: kept
			['\'a"b\'', 'a"b'], // repr 'a"b': only the outer pair goes
			["''", ''],
			['"\'q\'"', '"\'q\'"'], // the string 'q' with its quotes, repr "'q'": kept
			['42', '42'],
			['[1, "x"]', "[1, 'x']"],
		];
		for (const [code, want] of cases) {
			r = await s.runCode(code);
			check(r.results.length === 1 && r.results[0].text === want, `text of ${code}`, r.toJSON());
		}
		r = await s.runCode("from IPython.display import display\ndisplay('shown')\n'main'");
		check(r.results.map((x) => x.text).join(',') === 'shown,main', 'display() results too', r.toJSON());
		if (process.env.SBX_TEST_HAS_NODE === '1') {
			r = await s.runCode("\"'quoted'\"", { language: 'js' });
			check(r.text === 'quoted', 'a javascript string', r.toJSON());
		}
	},

	// E2B's killedSandbox.test.ts: a sandbox killed under a running cell makes
	// runCode reject with the SDK's TimeoutError (the connection aborted, then
	// isRunning() false), not resolve with an error.
	async killed() {
		const s = await create();
		await s.runCode('1');
		const execution = s.runCode('import time; time.sleep(60)');
		const settled = execution.then(
			(r) => ({ ok: r }),
			(e) => ({ err: e }),
		);
		await new Promise((res) => setTimeout(res, 2000));
		await s.kill();
		const t0 = Date.now();
		const got = await settled;
		check(got.err, 'runCode rejected', got.ok && got.ok.toJSON());
		check(got.err.name === 'TimeoutError', 'a TimeoutError', String(got.err));
		check(/sandbox was killed while the request was in progress/.test(got.err.message), 'the message', String(got.err));
		check(Date.now() - t0 < 10000, 'at once', Date.now() - t0);
	},

	// The same kill within the cell's first second, before it printed
	// anything: E2B's server has answered 200 by then (its stream starts
	// with the request), so the SDK sees the same cut and rejects the same
	// way, not with an HTTP status's SandboxError. Killed from the handle
	// and from another client, at a few moments of that first second.
	async killed_early() {
		for (const [ms, how] of [[100, 'handle'], [250, 'other'], [500, 'handle'], [800, 'other']]) {
			const s = await create();
			await s.runCode('1'); // the kernel is up: the next cell starts at once
			const settled = s.runCode('import time; time.sleep(60)').then(
				(r) => ({ ok: r }),
				(e) => ({ err: e }),
			);
			await new Promise((res) => setTimeout(res, ms));
			if (how === 'handle') await s.kill();
			else await Sandbox.kill(s.sandboxId);
			const t0 = Date.now();
			const got = await settled;
			const what = `killed ${ms} ms into the cell (${how})`;
			check(got.err, `${what}: runCode rejected`, got.ok && got.ok.toJSON());
			check(got.err.name === 'TimeoutError', `${what}: a TimeoutError`, String(got.err));
			check(/sandbox was killed while the request was in progress/.test(got.err.message), `${what}: the message`, String(got.err));
			check(Date.now() - t0 < 10000, `${what}: at once`, Date.now() - t0);
		}
	},

	// E2B's "list contexts": a fresh sandbox lists its default contexts
	// (python, and javascript where node is there) before anything ran; each
	// is the context a run by language uses, and runs by its id.
	async default_contexts() {
		const s = await create();
		const list = await s.listCodeContexts();
		const langs = list.map((c) => c.language);
		check(langs.includes('python'), 'python listed', list);
		const js = process.env.SBX_TEST_HAS_NODE === '1';
		check(langs.includes('javascript') === js, `javascript listed: ${js}`, list);
		const py = list.find((c) => c.language === 'python');
		check(py.id && py.cwd === '/home/user', 'the python context', py);
		check(JSON.stringify(await s.listCodeContexts()) === JSON.stringify(list), 'the same list again');
		let r = await s.runCode('d = 7', { context: py });
		check(!r.error, 'runs in the listed python context', r.toJSON());
		check((await s.runCode('d')).text === '7', 'it is the default context');
		check((await s.listCodeContexts()).some((c) => c.id === py.id), 'still listed with its id');
		if (js) {
			const jc = list.find((c) => c.language === 'javascript');
			await s.runCode('var jj = 5', { context: jc });
			r = await s.runCode('jj + 1', { language: 'javascript' });
			check(r.text === '6', 'the listed javascript context is the default', r.toJSON());
			check((await s.listCodeContexts()).filter((c) => c.language === 'javascript').length === 1, 'one javascript context');
		}
		await s.restartCodeContext(py);
		r = await s.runCode('d');
		check(r.error && r.error.name === 'NameError', 'the default restarted', r.toJSON());
		const other = await create();
		const l2 = await other.listCodeContexts();
		await other.restartCodeContext(l2.find((c) => c.language === 'python'));
		check((await other.runCode('1 + 1')).text === '2', 'a restart of a default not started yet');
	},

	// A matplotlib chart as a PNG, a DataFrame as HTML and text.
	async rich() {
		const s = await create();
		let r = await s.runCode('import matplotlib.pyplot as plt\nplt.plot([1, 3, 2])\nplt.show()');
		const png = r.results.find((x) => x.png);
		check(png, 'a png result', r.toJSON());
		const bytes = Buffer.from(png.png, 'base64');
		check(bytes.subarray(0, 8).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])), 'PNG signature');
		check(bytes.length > 1000, 'a real image', bytes.length);
		r = await s.runCode('import pandas as pd\npd.DataFrame({"a": [1, 2], "b": ["x", "y"]})');
		check(r.results.length === 1 && r.results[0].isMainResult, 'one main result', r.toJSON());
		check(/<table/.test(r.results[0].html), 'DataFrame as html', r.results[0]);
		check(/a\s+b/.test(r.results[0].text), 'DataFrame as text', r.results[0]);
		let seen = 0;
		r = await s.runCode('from IPython.display import display, HTML\ndisplay(HTML("<b>hi</b>"))\n7', {
			onResult: () => seen++,
		});
		check(seen === 2 && r.results[0].html === '<b>hi</b>' && !r.results[0].isMainResult, 'display()', r.toJSON());
		check(r.results[1].text === '7' && r.results[1].isMainResult, 'main result after display', r.toJSON());
	},

	// An exception: name, value, traceback; the context goes on.
	async error() {
		const s = await create();
		let got;
		const r = await s.runCode('def f():\n    raise ValueError("boom")\nf()', { onError: (e) => (got = e) });
		check(r.error && r.error.name === 'ValueError' && r.error.value === 'boom', 'error name and value', r.error);
		check(/f\(\)/.test(r.error.traceback) && /ValueError/.test(r.error.traceback), 'traceback', r.error.traceback);
		check(got && got.name === 'ValueError', 'onError');
		check((await s.runCode('1 + 1')).text === '2', 'the context goes on');
	},

	// Contexts: create, list, isolated state, restart, remove.
	async contexts() {
		const s = await create();
		await s.runCode('y = "default"');
		const c = await s.createCodeContext({ cwd: '/tmp' });
		check(c.id && c.language === 'python' && c.cwd === '/tmp', 'createCodeContext', c);
		let r = await s.runCode('import os; os.getcwd()', { context: c });
		check(r.text === '/tmp', 'cwd of the context', r.toJSON());
		r = await s.runCode('y', { context: c });
		check(r.error && r.error.name === 'NameError', 'contexts are isolated', r.toJSON());
		await s.runCode('z = 5', { context: c });
		check((await s.runCode('z', { context: c })).text === '5', 'state in the context');
		const list = await s.listCodeContexts();
		check(list.some((x) => x.id === c.id), 'listCodeContexts lists it', list);
		await s.restartCodeContext(c);
		r = await s.runCode('z', { context: c });
		check(r.error && r.error.name === 'NameError', 'restart clears the state', r.toJSON());
		await s.removeCodeContext(c.id);
		check(!(await s.listCodeContexts()).some((x) => x.id === c.id), 'removed');
		let failed;
		try {
			await s.runCode('1', { context: c });
		} catch (e) {
			failed = e;
		}
		check(failed && failed.name === 'NotFoundError', 'a removed context is NotFoundError', String(failed));
		check((await s.runCode('y')).text === 'default', 'the default context kept its state');
	},

	// The SDK's timeoutMs ends the request; the server goes on serving.
	async timeout() {
		const s = await create();
		await s.runCode('k = 1');
		let failed;
		const t0 = Date.now();
		try {
			await s.runCode('import time\nwhile True: time.sleep(0.1)', { timeoutMs: 1500 });
		} catch (e) {
			failed = e;
		}
		check(failed && failed.name === 'TimeoutError', 'TimeoutError', String(failed));
		check(Date.now() - t0 < 10000, 'in time');
		// Another context is free at once.
		const c = await s.createCodeContext();
		check((await s.runCode('2 * 3', { context: c })).text === '6', 'another context runs');
	},

	// A client that leaves interrupts its cell: the context is free at once
	// and the cell's later lines never ran (needs sbx_code_opts.cancel_fd).
	async hangup() {
		const s = await create();
		await s.runCode('k = 0');
		let failed;
		try {
			await s.runCode('import time\nfor i in range(100): time.sleep(0.1)\nk = 99', { timeoutMs: 1500 });
		} catch (e) {
			failed = e;
		}
		check(failed && failed.name === 'TimeoutError', 'TimeoutError', String(failed));
		const t0 = Date.now();
		const r = await s.runCode('k');
		check(r.text === '0', 'the cell was interrupted before k = 99', r.toJSON());
		check(Date.now() - t0 < 5000, 'the context was free at once', Date.now() - t0);
	},

	// JavaScript (sbx's node kernel): E2B's own test suite's cases, the
	// sandbox's and a run's env vars, an error, a timeout that keeps state.
	async js() {
		const s = await create({ envs: { SBX_SANDBOX_VAR: 'from-create' } });
		const js = { language: 'js' };
		let r = await s.runCode('console.log("Hello, World!")', js);
		check(JSON.stringify(r.logs.stdout) === '["Hello, World!\\n"]', 'console.log: one chunk', r.logs);
		check(r.error === undefined && r.results.length === 0, 'no result for undefined', r.toJSON());
		r = await s.runCode('const add = (x, y) => x + y;\nadd(1, 2)', js);
		check(r.results[0] && r.results[0].text === '3', 'add(1, 2)', r.toJSON());
		r = await s.runCode("async function main() {\n  return 'Hello, World!'\n}\nawait main()", js);
		check(r.results[0] && r.results[0].text === 'Hello, World!', 'top-level await: a string as it is', r.toJSON());
		await s.runCode('const z = 1', js);
		r = await s.runCode('z', js);
		check(r.text === '1', 'a const of one cell in the next', r.toJSON());
		r = await s.runCode('const w = await Promise.resolve(41); w + z', js);
		check(r.text === '42', 'await with a declaration', r.toJSON());
		check((await s.runCode('w', js)).text === '41', "an awaited cell's const stays");
		check((await s.runCode("require('path').join('a', 'b')", js)).text === 'a/b', 'require of a built-in');
		r = await s.runCode("const os = await import('node:os'); os.platform()", js);
		check(r.text === 'linux', 'import() of a built-in', r.toJSON());
		check((await s.runCode('({ a: [1, 2] })', js)).text === '{ a: [ 1, 2 ] }', 'objects via util.inspect');
		r = await s.runCode('process.cwd()', js);
		check(r.text === '/home/user', 'cwd /home/user', r.toJSON());
		check((await s.runCode('import os; os.getcwd()')).text === '/home/user', 'python: cwd /home/user');
		// Env vars: per run, restored after it; the sandbox's own seen, overridden for one run only.
		r = await s.runCode('process.env.FOO', { ...js, envs: { FOO: 'bar' } });
		check(r.text === 'bar', 'envs for the run', r.toJSON());
		r = await s.runCode("process.env.FOO || 'default'", js);
		check(r.text === 'default', 'envs restored after the run', r.toJSON());
		check((await s.runCode('process.env.SBX_SANDBOX_VAR', js)).text === 'from-create', "the sandbox's envs");
		r = await s.runCode('process.env.SBX_SANDBOX_VAR', { ...js, envs: { SBX_SANDBOX_VAR: 'run' } });
		check(r.text === 'run', "a run's value overrides the sandbox's", r.toJSON());
		check((await s.runCode('process.env.SBX_SANDBOX_VAR', js)).text === 'from-create', "the sandbox's value back");
		// An error: name, value, a traceback through the cell's function; the context goes on.
		r = await s.runCode("function boom() {\n  throw new TypeError('bad thing')\n}\nboom()", js);
		check(r.error && r.error.name === 'TypeError' && r.error.value === 'bad thing', 'error name and value', r.error);
		check(/at boom/.test(r.error.traceback), 'traceback', r.error.traceback);
		r = await s.runCode('undefinedThing + 1', js);
		check(r.error && r.error.name === 'ReferenceError', 'ReferenceError', r.error);
		// A cell past its timeout is interrupted (busy or awaiting); the context and its state stay.
		for (const code of ['while (true) {}', 'await new Promise((res) => setTimeout(res, 60000))']) {
			let failed;
			try {
				await s.runCode(code, { ...js, timeoutMs: 1500 });
			} catch (e) {
				failed = e;
			}
			check(failed && failed.name === 'TimeoutError', `TimeoutError: ${code}`, String(failed));
			const t0 = Date.now();
			r = await s.runCode('z + 1', js);
			check(r.text === '2', `state kept after interrupting ${code}`, r.toJSON());
			check(Date.now() - t0 < 5000, 'the context was free at once', Date.now() - t0);
		}
		// A context of its own, with its own cwd and state.
		const c = await s.createCodeContext({ cwd: '/home', language: 'js' });
		check((await s.runCode('process.cwd()', { context: c })).text === '/home', "the context's cwd");
		r = await s.runCode('typeof z', { context: c });
		check(r.text === 'undefined', 'contexts do not share state', r.toJSON());
		// The python context is untouched by all this.
		check((await s.runCode('1 + 1')).text === '2', 'python still runs');
	},

	// TypeScript: transpiled (types not checked), state kept like JavaScript's.
	async ts() {
		const s = await create();
		let r = await s.runCode('function subtract(x: number, y: number): number {\n  return x - y;\n}\nsubtract(1, 2)', {
			language: 'ts',
		});
		check(r.results[0] && r.results[0].text === '-1', 'subtract(1, 2)', r.toJSON());
		await s.runCode('interface P { name: string }\nconst p: P = { name: "ts" }', { language: 'typescript' });
		r = await s.runCode('const q: string = await Promise.resolve(p.name + "!"); q', { language: 'typescript' });
		check(r.text === 'ts!', 'state and top-level await in TypeScript', r.toJSON());
	},

	// Bash: env vars per run, the sandbox's own, state (variables, cwd), a timeout that keeps it.
	async bash() {
		const s = await create({ envs: { SBX_SANDBOX_VAR: 'from-create' } });
		const sh = { language: 'bash' };
		let r = await s.runCode('echo $FOO', { ...sh, envs: { FOO: 'bar' } });
		check(r.logs.stdout[0] === 'bar\n', 'envs for the run', r.logs);
		r = await s.runCode('echo ${FOO:-default}', sh);
		check(r.logs.stdout[0] === 'default\n', 'envs restored after the run', r.logs);
		r = await s.runCode('echo $SBX_SANDBOX_VAR', sh);
		check(r.logs.stdout[0] === 'from-create\n', "the sandbox's envs", r.logs);
		await s.runCode('x=5\ncd /tmp', sh);
		r = await s.runCode('echo $x; pwd', sh);
		check(r.logs.stdout.join('') === '5\n/tmp\n', 'variables and cwd kept', r.logs);
		let failed;
		try {
			await s.runCode('sleep 60', { ...sh, timeoutMs: 1500 });
		} catch (e) {
			failed = e;
		}
		check(failed && failed.name === 'TimeoutError', 'TimeoutError', String(failed));
		const t0 = Date.now();
		r = await s.runCode('echo $x', sh);
		check(r.logs.stdout.join('') === '5\n', 'state kept after the interrupt', r.logs);
		check(Date.now() - t0 < 5000, 'the context was free at once', Date.now() - t0);
		r = await s.runCode('echo out; ls /nonexistent-dir', sh);
		// A terminal has one output: stderr comes as stdout (as in bash_kernel, E2B's).
		check(/^out\nls: .*nonexistent-dir/.test(r.logs.stdout.join('')), 'output of a failing command', r.logs);
		check(r.error && r.error.name === 'ExitStatus' && /status 2/.test(r.error.value), 'a failing last command is an error', r.toJSON());
	},

	// Code in one sandbox cannot read another's files, in any language.
	async walls() {
		const a = await create();
		const b = await create();
		const secret = `secret-${Date.now()}-${Math.random()}`;
		await b.files.write('/home/user/secret.txt', secret);
		check((await b.runCode("require('fs').readFileSync('/home/user/secret.txt', 'utf8')", { language: 'js' })).text === secret, 'b reads its own');
		let r = await a.runCode("require('fs').readFileSync('/home/user/secret.txt', 'utf8')", { language: 'js' });
		check(r.error && r.error.name === 'Error' && /ENOENT/.test(r.error.value), "a does not see b's file", r.toJSON());
		// The server's own state (where every sandbox lives) is not there either.
		const home = process.env.SBX_ROOT;
		check(home, 'SBX_ROOT is set');
		r = await a.runCode(`require('fs').readdirSync(${JSON.stringify(home)})`, { language: 'js' });
		check(r.error && /ENOENT|EACCES|EPERM/.test(r.error.value), "the server's state dir is out of reach", r.toJSON());
		r = await a.runCode(`cat /home/user/secret.txt; ls ${home}`, { language: 'bash' });
		const all = r.logs.stdout.join('') + r.logs.stderr.join('');
		check(!all.includes(secret) && r.error, "bash in a does not see b's file", r.toJSON());
	},

	// Another sandbox's token, a wrong token, no token: the code port refuses.
	async auth() {
		const a = await create();
		const b = await create();
		const post = (id, headers) =>
			fetch(`${url}/execute`, {
				method: 'POST',
				headers: { 'Content-Type': 'application/json', 'E2b-Sandbox-Id': id, 'E2b-Sandbox-Port': '49999', ...headers },
				body: JSON.stringify({ code: '1' }),
			});
		check((await post(a.sandboxId, { 'X-Access-Token': b.envdAccessToken })).status === 401, "b's token on a");
		check((await post(a.sandboxId, { 'E2b-Traffic-Access-Token': b.trafficAccessToken })).status === 401, "b's traffic token on a");
		check((await post(a.sandboxId, {})).status === 401, 'no token');
		check((await post(a.sandboxId, { 'X-Access-Token': '' })).status === 401, 'an empty token');
		check((await post(a.sandboxId, { 'E2b-Traffic-Access-Token': '' })).status === 401, 'an empty traffic token');
		check(a.trafficAccessToken && a.trafficAccessToken !== a.envdAccessToken, 'a traffic token of its own');
		const ok = await post(a.sandboxId, { 'E2b-Traffic-Access-Token': a.trafficAccessToken });
		check(ok.status === 200 && /end_of_execution/.test(await ok.text()), "a's own traffic token");
		const bad = await fetch(`${url}/execute`, {
			method: 'POST',
			headers: { 'E2b-Sandbox-Id': a.sandboxId, 'E2b-Sandbox-Port': '49999', 'X-Access-Token': a.envdAccessToken },
			body: '{"code": 1',
		});
		check(bad.status === 400, 'bad JSON is 400', bad.status);
		await b.kill();
		check((await post(b.sandboxId, { 'X-Access-Token': b.envdAccessToken })).status === 502, 'a killed sandbox is 502');
	},
};

const fn = cases[name];
if (!fn) {
	console.error(`usage: node code.mjs ${Object.keys(cases).join('|')}`);
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
