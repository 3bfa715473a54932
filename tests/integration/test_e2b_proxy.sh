# The E2B data plane beyond envd's port, through `sbx serve`'s front door:
# the code interpreter on port 49999 driven by E2B's own
# @e2b/code-interpreter (tests/e2b/code.mjs), and the port proxy into a
# sandbox's loopback (tests/e2b/ports.mjs, with servers started inside the
# sandbox), with attacks on both.

source "${SBX_SRC:-.}/tests/integration/e2b_lib.sh"
# The code interpreter's runs and the proxy's slow cases take longer than
# test_e2b.sh's lifecycle.
E2B_SERVE_TIMEOUT=600
E2B_NODE_TIMEOUT=180

need_ipykernel() {
	/usr/bin/python3 -c 'import ipykernel, jupyter_client, matplotlib, pandas' 2> /dev/null ||
		skip "/usr/bin/python3 with ipykernel, jupyter_client, matplotlib and pandas is not installed (scripts/deps.sh test)"
}

code_case() {
	need_e2b_sdk @e2b/code-interpreter
	need_ipykernel
	e2b_start
	# Cases with javascript parts run them where the host has node (the
	# code-interpreter-v1 template shows the host's /usr).
	local has_node=0
	command -v node > /dev/null && has_node=1
	SBX_TEST_HAS_NODE=$has_node e2b_node code.mjs "$1"
	e2b_alive
}

t_e2b_code_state_and_streaming() { code_case state; }
t_e2b_code_rich_results() { code_case rich; }
t_e2b_code_error() { code_case error; }
t_e2b_code_contexts() { code_case contexts; }
t_e2b_code_timeout() { code_case timeout; }
t_e2b_code_auth() { code_case auth; }
t_e2b_code_string_results_as_e2b() { code_case strings; }
t_e2b_code_killed_mid_cell_rejects() { code_case killed; }
# Killed in the cell's first second, before any output: the same rejection
# (no HTTP error status where E2B's server would have answered 200).
t_e2b_code_killed_early_rejects() { code_case killed_early; }
t_e2b_code_default_contexts_listed() { code_case default_contexts; }
# sbx's kernels for the other languages E2B's SDK names (docs/code.md
# "Languages"): node for js and ts, Debian's node-typescript, bash with
# python3-pexpect, all from the host's /usr (scripts/deps.sh test).
need_node_kernel() {
	command -v node > /dev/null || skip "node is not installed (Debian: nodejs)"
}
t_e2b_code_javascript() {
	need_node_kernel
	code_case js
}
t_e2b_code_typescript() {
	need_node_kernel
	[ -d /usr/share/nodejs/typescript ] || skip "node-typescript is not installed (scripts/deps.sh test)"
	code_case ts
}
t_e2b_code_bash() {
	/usr/bin/python3 -c 'import pexpect' 2> /dev/null || skip "python3-pexpect is not installed (scripts/deps.sh test)"
	code_case bash
}
t_e2b_code_walls_hold_in_every_language() {
	need_node_kernel
	code_case walls
}
# A client that hangs up mid-cell interrupts it: needs the library's cancel
# (sbx_code_opts.cancel_fd, SBX_CODE_OPTS_VERSION 2).
t_e2b_code_hangup_interrupts() {
	grep -Eq '^#define SBX_CODE_OPTS_VERSION ([2-9]|[1-9][0-9])' "$SBX_SRC/include/sbx.h" ||
		skip "the library cannot cancel a code run yet (sbx_code_opts.cancel_fd)"
	code_case hangup
}

port_case() {
	need_e2b_sdk @e2b/code-interpreter
	e2b_start "${@:2}"
	e2b_node ports.mjs "$1"
	e2b_alive
}

t_e2b_proxy_http_keepalive_stream() { port_case http; }
t_e2b_proxy_upgrade_relayed() { port_case upgrade; }
t_e2b_proxy_refusals_ports_tokens() { port_case refusals; }
t_e2b_proxy_smuggling_and_big_heads() { port_case smuggling; }
t_e2b_proxy_slow_clients() { port_case slow; }
t_e2b_proxy_sandbox_killed_mid_stream() { port_case killed; }
# sbx serve --domain: Host routing ({port}-{id}.{domain}) to ports and envd,
# its refusals, and names outside the domain left alone.
t_e2b_proxy_host_routing() { port_case host --domain sbx.test; }
