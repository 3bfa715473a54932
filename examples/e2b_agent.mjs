// A small agent loop written only against E2B's official SDK (npm `e2b`): a
// "model" picks the next tool call from what it has seen so far, the loop runs
// the call in a sandbox and hands the observation back. The model here is
// scripted (a fixed list of steps, no network LLM); a real agent asks an LLM
// for the same tool calls. Nothing in it is specific to sbx: it runs
// unchanged against E2B's cloud and against `sbx serve`.
//
//   npm install e2b                (next to this file)
//
// Against sbx (docs/e2b.md):
//   echo "e2b_$(openssl rand -hex 16)" > ~/.sbx-token && chmod 600 ~/.sbx-token
//   sbx serve --listen 127.0.0.1:3000 --token-file ~/.sbx-token &
//   E2B_API_URL=http://127.0.0.1:3000 E2B_SANDBOX_URL=http://127.0.0.1:3000 \
//     E2B_API_KEY=$(cat ~/.sbx-token) node e2b_agent.mjs
//
// Against E2B's cloud:
//   E2B_API_KEY=e2b_... node e2b_agent.mjs
import { Sandbox } from 'e2b';

const DIR = '/home/user/agent';

// The scripted model: given the transcript (the calls so far and what they
// returned), the next call, or {tool: 'answer'} when done.
const script = [
	() => ({
		tool: 'write_file',
		path: `${DIR}/primes.py`,
		content: [
			'import sys',
			'n = int(sys.argv[1])',
			'primes = [p for p in range(2, n) if all(p % d for d in range(2, int(p ** 0.5) + 1))]',
			'print(" ".join(map(str, primes)))',
			'open("primes.txt", "w").write(str(len(primes)) + "\\n")',
			'',
		].join('\n'),
	}),
	() => ({ tool: 'run', cmd: 'python3 primes.py 50', cwd: DIR }),
	() => ({ tool: 'read_file', path: `${DIR}/primes.txt` }),
	() => ({ tool: 'list_files', path: DIR }),
	() => ({ tool: 'start_background', cmd: 'sleep 600' }),
	(seen) => ({ tool: 'kill_background', pid: seen.at(-1).result.pid }),
	(seen) => ({
		tool: 'answer',
		text: `primes below 50: ${seen[1].result.stdout.trim()} (${seen[2].result.trim()} of them)`,
	}),
];
function model(seen) {
	return script[seen.length](seen);
}

// The tools the model may call, each one SDK call (or two) on the sandbox.
const tools = {
	write_file: (sbx, a) => sbx.files.write(a.path, a.content).then((i) => i.path),
	run: (sbx, a) => sbx.commands.run(a.cmd, { cwd: a.cwd }),
	read_file: (sbx, a) => sbx.files.read(a.path),
	list_files: (sbx, a) => sbx.files.list(a.path).then((l) => l.map((e) => e.name).sort()),
	start_background: (sbx, a) => sbx.commands.run(a.cmd, { background: true }).then((h) => ({ pid: h.pid })),
	kill_background: async (sbx, a) => {
		const killed = await sbx.commands.kill(a.pid);
		const left = (await sbx.commands.list()).some((p) => p.pid === a.pid);
		return { killed, running: left };
	},
};

const sandbox = await Sandbox.create({ timeoutMs: 120_000 });
console.log(`sandbox ${sandbox.sandboxId} created`);
try {
	const seen = [];
	for (;;) {
		const call = model(seen);
		if (call.tool === 'answer') {
			console.log(`answer: ${call.text}`);
			break;
		}
		const result = await tools[call.tool](sandbox, call);
		console.log(`${call.tool}: ${JSON.stringify(result)}`);
		seen.push({ call, result });
	}
} finally {
	await sandbox.kill();
	console.log('sandbox killed');
}
