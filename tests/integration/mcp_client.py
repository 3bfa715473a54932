"""A minimal MCP client over `sbx mcp` (stdio, plain JSON-RPC) for the
integration tests: `call(name, args)` returns (is_error, structuredContent).
Usage from a test's python3 heredoc: sys.path has this directory;
`from mcp_client import Client; c = Client(sys.argv[1])`."""
import json
import subprocess


class Client:
    def __init__(self, sbx):
        self.p = subprocess.Popen([sbx, "mcp"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.n = 0
        self._send({"jsonrpc": "2.0", "id": 0, "method": "initialize",
                    "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                               "clientInfo": {"name": "sbx-tests", "version": "1"}}})
        self._send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        self.p.stdout.readline()

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
