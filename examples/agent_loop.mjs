// A minimal agent loop over MCP: the official TypeScript SDK drives `sbx mcp`
// on stdio. It creates an environment, writes a program into it, runs it,
// reads what it produced, and destroys the environment. An LLM agent does
// the same with the tool calls it chooses.
//
//   npm install @modelcontextprotocol/sdk
//   node agent_loop.mjs            (SBX_BIN overrides the `sbx` on PATH)
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';

const transport = new StdioClientTransport({
	command: process.env.SBX_BIN || 'sbx',
	args: ['mcp'],
	env: { ...process.env },
	stderr: 'inherit',
});
const client = new Client({ name: 'sbx-example-agent', version: '1.0.0' });
await client.connect(transport);

// Every sbx tool returns structuredContent; isError means sbx could not do it.
async function tool(name, args) {
	const r = await client.callTool({ name, arguments: args });
	if (r.isError) throw new Error(`${name}: ${r.structuredContent.error.message}`);
	return r.structuredContent;
}

const { tools } = await client.listTools();
console.log(`tools: ${tools.map((t) => t.name).join(', ')}`);

const { environment_id: id } = await tool('environment_create', {});
console.log(`created environment ${id}`);
try {
	await tool('environment_write_file', {
		environment_id: id,
		path: '/root/hello.sh',
		content: '#!/bin/sh\necho "hello from the sandbox: $(uname -s)" | tee /root/out.txt\n',
		mode: 0o755,
	});
	const run = await tool('environment_execute', { environment_id: id, command: '/root/hello.sh' });
	console.log(`exit ${run.exit_code}, stdout: ${run.stdout.trim()}`);
	// A failing command is a normal result: the agent reads exit_code and stderr.
	const bad = await tool('environment_execute', { environment_id: id, command: 'ls /nonexistent' });
	console.log(`exit ${bad.exit_code}, stderr: ${bad.stderr.trim()}`);
	const file = await tool('environment_read_file', { environment_id: id, path: '/root/out.txt' });
	console.log(`out.txt: ${file.content.trim()}`);
} finally {
	const d = await tool('environment_destroy', { environment_id: id });
	console.log(d.destroyed ? `destroyed ${id}` : `could not destroy ${id}`);
	await client.close();
}
