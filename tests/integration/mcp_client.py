"""A minimal MCP client over `sbx mcp` (stdio, plain JSON-RPC) for the
integration tests: `call(name, args)` returns (is_error, structuredContent).
Usage from a test's python3 heredoc: sys.path has this directory;
`from mcp_client import Client; c = Client(sys.argv[1])`.
At exit the server's input is closed and the server waited for: it drains
its background destroys before it exits (src/server/reaper.h), and the
harness's leak check must not run while it still removes (a removal's
rename into the trash after that check's gc was reported as leaked trash)."""
import atexit
import json
import subprocess


class Client:
    def __init__(self, sbx):
        self.p = subprocess.Popen([sbx, "mcp"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.n = 0
        atexit.register(self.close)
        self._send({"jsonrpc": "2.0", "id": 0, "method": "initialize",
                    "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                               "clientInfo": {"name": "sbx-tests", "version": "1"}}})
        self._send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        self.p.stdout.readline()

    def close(self):
        if self.p.poll() is None:
            try:
                self.p.stdin.close()
                self.p.wait(timeout=60)
            except (OSError, subprocess.TimeoutExpired):
                self.p.kill()

    def _send(self, m):
        self.p.stdin.write(json.dumps(m) + "\n")
        self.p.stdin.flush()

    def call(self, name, args):
        self.n += 1
        self._send({"jsonrpc": "2.0", "id": self.n, "method": "tools/call",
                    "params": {"name": name, "arguments": args}})
        while True:
            m = json.loads(self.p.stdout.readline())
            if m.get("id") == self.n:
                r = m["result"]
                return r.get("isError", False), r["structuredContent"]
