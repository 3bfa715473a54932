# A tiny server to run inside a sandbox for tests/e2b/ports.mjs (python3's
# standard library only): python3 port_server.py PORT
#   GET|POST /echo[?...]  200 JSON {method, path, headers, body_len, body_head}
#   GET /stream           a chunked body: "tick N\n" every 0.2 s, forever
#   GET /log              the request paths seen so far, one a line
#   Upgrade: echo         101, then every byte is sent back until EOF
#   Upgrade: websocket    101 with Sec-WebSocket-Accept, then the same echo
#                         (the bytes, unframed: the relay is what is tested)
import base64
import hashlib
import http.server
import json
import socketserver
import sys
import threading
import time

seen = []
lock = threading.Lock()


class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def _echo(self):
        n = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(n) if n else b""
        out = json.dumps({
            "method": self.command,
            "path": self.path,
            "headers": {k.lower(): v for k, v in self.headers.items()},
            "body_len": len(body),
            "body_head": body[:64].decode("latin-1"),
        }).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(out)))
        self.send_header("X-Echo", "yes")
        self.end_headers()
        self.wfile.write(out)

    def _upgrade(self, proto):
        self.send_response(101)
        self.send_header("Upgrade", proto)
        self.send_header("Connection", "Upgrade")
        key = self.headers.get("Sec-WebSocket-Key")
        if proto == "websocket" and key:
            guid = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
            acc = base64.b64encode(hashlib.sha1(key.encode() + guid).digest()).decode()
            self.send_header("Sec-WebSocket-Accept", acc)
        self.end_headers()
        self.wfile.flush()
        self.close_connection = True
        c = self.connection
        while True:
            b = c.recv(65536)
            if not b:
                break
            c.sendall(b)
        try:
            c.shutdown(1)
        except OSError:
            pass

    def _dispatch(self):
        with lock:
            seen.append(self.command + " " + self.path)
        up = self.headers.get("Upgrade", "").lower()
        if up in ("echo", "websocket"):
            return self._upgrade(up)
        if self.path.startswith("/echo"):
            return self._echo()
        if self.path == "/log":
            out = ("\n".join(seen) + "\n").encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(out)))
            self.end_headers()
            self.wfile.write(out)
            return
        if self.path == "/stream":
            self.send_response(200)
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            i = 0
            while True:
                line = ("tick %d\n" % i).encode()
                self.wfile.write(b"%x\r\n%s\r\n" % (len(line), line))
                self.wfile.flush()
                i += 1
                time.sleep(0.2)
        self.send_response(404)
        self.send_header("Content-Length", "0")
        self.end_headers()

    do_GET = do_POST = do_PUT = do_DELETE = _dispatch


class S(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True


S(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
