// Tiny JSON query helper for the raw MCP tests (jq is not installed):
//   node jsonq.mjs FILE EXPR
// FILE holds one JSON-RPC message per line (the stdout of `sbx mcp`); EXPR is
// a JavaScript expression over `msgs` (all parsed lines) and `id(N)` (the
// response whose id is N). Strings print raw, anything else as JSON. A line
// that is not JSON is an error: the server must print nothing else.
import { readFileSync } from 'node:fs';

const [file, expr] = process.argv.slice(2);
const lines = readFileSync(file, 'utf8').split('\n').filter((l) => l.length > 0);
const msgs = lines.map((l, i) => {
	try {
		return JSON.parse(l);
	} catch {
		console.error(`line ${i + 1} of the server output is not JSON: ${l.slice(0, 200)}`);
		process.exit(3);
	}
});
const id = (n) => msgs.find((m) => m.id === n && !('method' in m));
const v = new Function('msgs', 'id', `return (${expr});`)(msgs, id);
console.log(typeof v === 'string' ? v : JSON.stringify(v));
