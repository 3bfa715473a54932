// Hostile-load cases for `sbx mcp` through the official TypeScript SDK over
// stdio (issue 13): a command whose output is far larger than any sane
// message must not end the server. Usage: node sdk_hardening.mjs CASE.
// Needs SBX_BIN; SBX_ROOT/SBX_RUN pass through.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';

function check(cond, msg, extra) {
	if (!cond) {
		const x = extra === undefined ? '' : `: ${JSON.stringify(extra).slice(0, 400)}`;
		throw new Error(`check failed: ${msg}${x}`);
	}
}

async function connect() {
	const transport = new StdioClientTransport({
		command: process.env.SBX_BIN,
		args: ['mcp'],
		env: { ...process.env },
		stderr: 'inherit',
	});
	const client = new Client({ name: 'sbx-hardening', version: '1.0.0' });
	await client.connect(transport);
	return client;
}

async function ok(client, name, args, opts) {
	const r = await client.callTool({ name, arguments: args }, undefined, opts);
	check(!r.isError, `${name} should succeed`, r);
	return r.structuredContent;
}

const cases = {
	async big_output(client) {
		const env = await ok(client, 'environment_create', {});
		const id = env.environment_id;
		try {
			const t0 = Date.now();
			const r = await ok(
				client,
				'environment_execute',
				{ environment_id: id, command: 'yes | head -c 52428800; echo done >&2' },
				{ timeout: 300000 },
			);
			check(r.exit_code === 0, 'the flood exits 0', { exit_code: r.exit_code, stderr: r.stderr });
			check(r.stdout_truncated === true, 'stdout_truncated', r.stdout_truncated);
			check(r.stdout.length > 0 && r.stdout.length < 52428800, 'stdout is capped', r.stdout.length);
			check(/^(y\n)+y?\n?$/.test(r.stdout.slice(0, 4096)), 'stdout starts with the output', r.stdout.slice(0, 20));
			check(r.stderr === 'done\n', 'stderr kept', r.stderr);
			console.error(`big_output: ${r.stdout.length} bytes of stdout kept, ${Date.now() - t0} ms`);
			// The server keeps serving: a later call works.
			const r2 = await ok(client, 'environment_execute', { environment_id: id, command: 'echo after' });
			check(r2.stdout === 'after\n' && r2.stdout_truncated === false, 'a later call works', r2);
			const { tools } = await client.listTools();
			check(tools.length > 0, 'tools/list after the flood');
		} finally {
			await client.callTool({ name: 'environment_destroy', arguments: { environment_id: id } }).catch(() => {});
		}
	},
};

const name = process.argv[2];
if (!cases[name]) {
	console.error(`usage: node sdk_hardening.mjs {${Object.keys(cases).join('|')}}`);
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
