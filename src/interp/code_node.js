// sbx's JavaScript/TypeScript evaluator: the node child of the sbx-javascript and sbx-typescript
// kernels (code_kernels.py, docs/code.md). It runs INSIDE an environment, started as
//   node --expose-internals code_node.js
// with SBX_NODE_CTL_FD naming a socket to its kernel. Requests arrive on that socket, one JSON line
// each: {"id": N, "code": "...", "lang": "javascript"|"typescript", "cell": its execution count (0:
// a silent one)}; for each, one JSON line answers once the cell is done: {"id": N, "ok": true,
// "text"?: "..."} (text: the last expression's value) or {"id": N, "ok": false, "ename", "evalue",
// "traceback": [...]}. What the cell prints goes to this
// process's own stdout and stderr (pipes, written synchronously on Linux), which the kernel streams:
// all of a cell's output is in the pipes before its answer is sent.
//
// Every cell runs in this process's one global context (vm.runInThisContext, as node's REPL), so a
// `const` or `function` of one cell is visible in the next. A cell with top-level await is rewritten
// by node's own REPL transform (internal/repl/await: declarations hoisted so that they persist); a
// SIGINT interrupts the running cell (breakOnSigint while it runs synchronously, the pending promise
// rejected while it awaits) and the process lives on.
'use strict';

const net = require('net');
const path = require('path');
const url = require('url');
const util = require('util');
const vm = require('vm');
const Module = require('module');

let processTopLevelAwait = null;
try {
	processTopLevelAwait = require('internal/repl/await').processTopLevelAwait;
} catch (e) {
	// Without --expose-internals (or a node without the module): top-level await is refused below.
}

// TypeScript: Debian's node-typescript lives in /usr/share/nodejs, on Debian's node's own search
// path but not on NodeSource's.
let ts;
function typescript() {
	if (ts !== undefined) return ts;
	ts = null;
	for (const p of ['typescript', '/usr/share/nodejs/typescript', '/usr/lib/nodejs/typescript',
		'/usr/local/lib/node_modules/typescript', '/usr/lib/node_modules/typescript']) {
		try {
			ts = require(p);
			break;
		} catch (e) {
			// the next
		}
	}
	return ts;
}

// `import()` in a cell: vm scripts get no module loader before node 21 (it throws
// ERR_VM_DYNAMIC_IMPORT_CALLBACK_MISSING_FLAG without --experimental-vm-modules), so each
// `import(...)` expression (found by acorn, node's own parser, or Debian's node-acorn) calls
// __sbxImport instead: the specifier resolved from the working directory, then imported here.
function requireFirst(names) {
	for (const n of names) {
		try {
			return require(n);
		} catch (e) {
			// the next
		}
	}
	return null;
}
const acorn = requireFirst(['internal/deps/acorn/acorn/dist/acorn', 'acorn', '/usr/share/nodejs/acorn']);
const walk = requireFirst(['internal/deps/acorn/acorn-walk/dist/walk', 'acorn-walk', '/usr/share/nodejs/acorn-walk']);

function rewriteImports(code) {
	if (!acorn || !walk || !/\bimport\s*\(/.test(code)) return code;
	const starts = [];
	try {
		const ast = acorn.parse(code, {
			ecmaVersion: 'latest', sourceType: 'script', allowAwaitOutsideFunction: true,
			allowReturnOutsideFunction: true, allowHashBang: true,
		});
		walk.full(ast, (node) => {
			if (node.type === 'ImportExpression') starts.push(node.start);
		});
	} catch (e) {
		return code; // not parsable here: compiled as it is, for the real error
	}
	for (const at of starts.sort((a, b) => b - a))
		if (code.startsWith('import', at)) code = `${code.slice(0, at)}__sbxImport${code.slice(at + 6)}`;
	return code;
}

globalThis.__sbxImport = (spec) => {
	let target = String(spec);
	try {
		if (!Module.isBuiltin(target)) target = url.pathToFileURL(globalThis.require.resolve(target)).href;
	} catch (e) {
		// an ES-only package, a URL, ...: node resolves it as it is
	}
	return import(target);
};

class CellError extends Error {}

function transpile(code) {
	const t = typescript();
	if (!t) {
		const e = new CellError('TypeScript is not installed in the environment (Debian: node-typescript)');
		e.name = 'TypeScriptNotInstalled';
		throw e;
	}
	// Types are not checked (as Deno's kernel runs a cell without checking it); imports become require.
	const out = t.transpileModule(code, {
		compilerOptions: {
			target: t.ScriptTarget.ES2022, module: t.ModuleKind.CommonJS, esModuleInterop: true,
			sourceMap: false, removeComments: false,
		},
		reportDiagnostics: false,
	}).outputText;
	// The prologue TS adds would be the cell's value when its last statement is a declaration.
	return out.replace(/^"use strict";\n/, '')
		.replace(/^Object\.defineProperty\(exports, "__esModule", \{ value: true \}\);\n/m, '')
		.replace(/\n\/\/# sourceMappingURL=.*\n?$/, '\n');
}

// What a cell sees as its module: require from the working directory (built-ins, the directory's
// node_modules, NODE_PATH), and exports for what TypeScript's CommonJS output writes to.
const cellFile = path.join(process.cwd(), '[cell]');
globalThis.require = Module.createRequire(cellFile);
globalThis.module = { exports: {} };
globalThis.exports = globalThis.module.exports;
globalThis.__filename = cellFile;
globalThis.__dirname = process.cwd();

let pending = null; // reject() of the cell awaiting now
process.on('SIGINT', () => {
	if (pending) pending(interrupted());
});
// An error thrown later by a timer or a promise nobody awaits does not end the kernel.
process.on('uncaughtException', (e) => process.stderr.write(`Uncaught ${util.inspect(e)}\n`));
process.on('unhandledRejection', (e) => process.stderr.write(`Unhandled rejection: ${util.inspect(e)}\n`));

function interrupted() {
	const e = new CellError('the cell was interrupted');
	e.name = 'Interrupted';
	return e;
}

function display(value) {
	return typeof value === 'string' ? value : util.inspect(value, { depth: 4, maxArrayLength: 200 });
}

async function run(req) {
	let code = req.code;
	if (req.lang === 'typescript') code = transpile(code);
	// A traceback's frames name the cell by its execution count, as IPython's do.
	const filename = req.cell ? `<cell ${req.cell}>` : '<sbx>';
	code = rewriteImports(code);
	let wrapped = null;
	if (/\bawait\b/.test(code)) {
		if (!processTopLevelAwait) {
			const e = new CellError('top-level await needs node started with --expose-internals');
			e.name = 'SyntaxError';
			throw e;
		}
		try {
			wrapped = processTopLevelAwait(code);
		} catch (e) {
			wrapped = null; // not parsable: compiled as it is, for the real error
		}
	}
	let script;
	try {
		script = new vm.Script(wrapped || code, {
			filename,
			importModuleDynamically: (spec) => import(spec),
		});
	} catch (e) {
		// A static import in JavaScript: TypeScript's transpiler turns it into require.
		if (req.lang !== 'typescript' && /Cannot use import statement/.test(String(e && e.message)) && typescript())
			return run({ ...req, code: transpile(req.code), lang: 'javascript-transpiled' });
		throw e;
	}
	let value = script.runInThisContext({ breakOnSigint: true, displayErrors: false });
	if (wrapped) {
		value = await new Promise((resolve, reject) => {
			pending = reject;
			Promise.resolve(value).then(resolve, reject);
		}).finally(() => {
			pending = null;
		});
		value = value ? value.value : undefined;
	}
	// Boxed: a promise that is the cell's value is shown as such (as in node's REPL), not awaited.
	return { value };
}

function errorReply(e) {
	if (e && e.code === 'ERR_SCRIPT_EXECUTION_INTERRUPTED') e = interrupted();
	if (e instanceof CellError) return { ename: e.name, evalue: e.message, traceback: [`${e.name}: ${e.message}`] };
	if (e instanceof Error || (e && typeof e === 'object' && 'stack' in e)) {
		// The frames of this evaluator and of node's vm are not the cell's.
		const stack = String(e.stack || `${e.name}: ${e.message}`).split('\n')
			.filter((l) => !l.includes(__filename) && !/\(node:vm[:)]|at node:vm|node:internal/.test(l));
		return { ename: String(e.name || 'Error'), evalue: String(e.message), traceback: stack };
	}
	return { ename: 'Uncaught', evalue: display(e), traceback: [`Uncaught ${display(e)}`] };
}

const ctl = new net.Socket({ fd: Number(process.env.SBX_NODE_CTL_FD), readable: true, writable: true });
delete process.env.SBX_NODE_CTL_FD;
let queue = Promise.resolve();
let buf = '';
ctl.setEncoding('utf8');
ctl.on('data', (chunk) => {
	buf += chunk;
	let nl;
	while ((nl = buf.indexOf('\n')) >= 0) {
		const line = buf.slice(0, nl);
		buf = buf.slice(nl + 1);
		queue = queue.then(() => answer(JSON.parse(line)));
	}
});
ctl.on('end', () => process.exit(0));

async function answer(req) {
	let reply;
	try {
		const { value } = await run(req);
		reply = { id: req.id, ok: true };
		if (value !== undefined) reply.text = display(value);
	} catch (e) {
		reply = { id: req.id, ok: false, ...errorReply(e) };
	}
	ctl.write(JSON.stringify(reply) + '\n');
}
