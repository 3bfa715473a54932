# The MCP servers under hostile load and hostile input (issue 13): idle
# connections that try to lock `sbx serve` out, slow clients, a command's
# output far larger than a message, wrong-typed arguments, NUL in strings.

MCP_DIR="$SBX_SRC/tests/mcp"

need_node() { command -v node > /dev/null || skip "node is not installed (needed to drive and parse MCP)"; }
need_sdk() {
	need_node
	[ -f "$MCP_DIR/node_modules/@modelcontextprotocol/sdk/package.json" ] && return 0
	command -v npm > /dev/null || skip "npm is not installed (needed to install @modelcontextprotocol/sdk)"
	(cd "$MCP_DIR" && timeout 300 npm ci --no-audit --no-fund --loglevel=error > /dev/null 2>&1) ||
		skip "npm ci in tests/mcp failed (no access to the npm registry?)"
}

# A 50 MB output through the official SDK client over stdio: the server
# caps it, flags it and keeps serving (it used to exit: "Connection closed").
t_mcp_sdk_big_output_survives() {
	need_sdk
	SBX_BIN="$SBX_BIN" timeout 300 node "$MCP_DIR/sdk_hardening.mjs" big_output
}
