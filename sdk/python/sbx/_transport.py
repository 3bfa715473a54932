"""MCP clients for sbx: ``sbx mcp`` over stdio (spawned on demand) and
``sbx serve`` over Streamable HTTP. Standard library only.

Both expose ``call_tool(name, arguments, on_progress=None) -> dict`` that
returns the tool's structuredContent, or raises an SbxError carrying the
MCP error code. Calls may be made from several threads at once.
"""

from __future__ import annotations

import http.client
import itertools
import json
import os
import shutil
import subprocess
import threading
import urllib.parse
from typing import Any, Callable, Dict, Optional, Tuple

from .errors import SbxError, TransportError, from_code

PROTOCOL_VERSION = "2025-06-18"
CLIENT_INFO = {"name": "sbx-python", "version": "0.1.0"}

ProgressFn = Callable[[str], None]


def _tool_result(result: Dict[str, Any]) -> Dict[str, Any]:
    """structuredContent of a tools/call result, or the error it carries."""
    sc = result.get("structuredContent")
    if result.get("isError"):
        err = (sc or {}).get("error") or {}
        msg = err.get("message")
        if not msg:
            texts = [c.get("text", "") for c in result.get("content", []) if isinstance(c, dict)]
            msg = " ".join(t for t in texts if t) or "tool call failed"
        raise from_code(err.get("code"), msg)
    if sc is None:
        # A server that sends only text content: the text is the same JSON.
        for c in result.get("content", []):
            if isinstance(c, dict) and c.get("type") == "text":
                try:
                    return json.loads(c["text"])
                except (ValueError, KeyError):
                    break
        return {}
    return sc


def _rpc_error(err: Dict[str, Any]) -> SbxError:
    data = err.get("data") if isinstance(err.get("data"), dict) else {}
    return from_code(data.get("code"), err.get("message", "request failed"), err.get("code"))


def find_sbx() -> str:
    """The sbx binary: $SBX, else sbx on PATH."""
    exe = os.environ.get("SBX") or shutil.which("sbx")
    if not exe:
        raise TransportError("cannot find the sbx binary: put it on PATH or set $SBX")
    return exe


class StdioClient:
    """One ``sbx mcp`` child process; requests are multiplexed by id."""

    def __init__(self, sbx: Optional[str] = None, args: Optional[list] = None, env: Optional[dict] = None):
        exe = sbx or find_sbx()
        try:
            self._proc = subprocess.Popen(
                [exe, "mcp", *(args or [])],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env=env,
                bufsize=0,
            )
        except OSError as e:
            raise TransportError(f"cannot start '{exe} mcp': {e}") from e
        self._ids = itertools.count(1)
        self._lock = threading.Lock()  # the pending table and writes to stdin
        self._pending: Dict[int, Dict[str, Any]] = {}
        self._progress: Dict[str, ProgressFn] = {}
        self._stderr = b""
        self._closed = False
        self._reader = threading.Thread(target=self._read_loop, name="sbx-mcp-reader", daemon=True)
        self._reader.start()
        self._errthread = threading.Thread(target=self._drain_stderr, daemon=True)
        self._errthread.start()
        self.server_info = self._request(
            "initialize",
            {"protocolVersion": PROTOCOL_VERSION, "capabilities": {}, "clientInfo": CLIENT_INFO},
        )
        self._notify("notifications/initialized", {})

    # -- wire -------------------------------------------------------------
    def _send(self, msg: Dict[str, Any]) -> None:
        line = json.dumps(msg, separators=(",", ":")).encode() + b"\n"
        with self._lock:
            if self._closed:
                raise TransportError("the sbx mcp server has exited" + self._why())
            try:
                self._proc.stdin.write(line)
                self._proc.stdin.flush()
            except (BrokenPipeError, OSError) as e:
                raise TransportError(f"the sbx mcp server has exited{self._why()}") from e

    def _why(self) -> str:
        tail = self._stderr.decode(errors="replace").strip().splitlines()[-1:]
        return f": {tail[0]}" if tail else ""

    def _drain_stderr(self) -> None:
        for chunk in iter(lambda: self._proc.stderr.read(4096), b""):
            self._stderr = (self._stderr + chunk)[-8192:]

    def _read_loop(self) -> None:
        f = self._proc.stdout
        for line in iter(f.readline, b""):
            try:
                msg = json.loads(line)
            except ValueError:
                continue
            if not isinstance(msg, dict):
                continue
            if "method" in msg:
                self._on_server_message(msg)
                continue
            with self._lock:
                slot = self._pending.get(msg.get("id"))
            if slot is not None:
                slot["msg"] = msg
                slot["done"].set()
        with self._lock:
            self._closed = True
            slots = list(self._pending.values())
        for slot in slots:
            slot["done"].set()

    def _on_server_message(self, msg: Dict[str, Any]) -> None:
        if msg.get("method") == "notifications/progress":
            p = msg.get("params") or {}
            fn = self._progress.get(str(p.get("progressToken")))
            if fn and isinstance(p.get("message"), str):
                try:
                    fn(p["message"])
                except Exception:  # a callback's failure must not stop the reader
                    pass
        elif "id" in msg:  # a request from the server (ping, ...)
            if msg.get("method") == "ping":
                self._send({"jsonrpc": "2.0", "id": msg["id"], "result": {}})
            else:
                self._send({"jsonrpc": "2.0", "id": msg["id"],
                            "error": {"code": -32601, "message": "method not supported by the client"}})

    def _notify(self, method: str, params: Dict[str, Any]) -> None:
        self._send({"jsonrpc": "2.0", "method": method, "params": params})

    def _request(self, method: str, params: Dict[str, Any], on_progress: Optional[ProgressFn] = None) -> Any:
        rid = next(self._ids)
        slot = {"done": threading.Event(), "msg": None}
        token = None
        if on_progress is not None:
            token = f"p{rid}"
            params = dict(params, _meta={"progressToken": token})
            self._progress[token] = on_progress
        with self._lock:
            self._pending[rid] = slot
        try:
            self._send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
            slot["done"].wait()
        finally:
            with self._lock:
                self._pending.pop(rid, None)
            if token:
                self._progress.pop(token, None)
        msg = slot["msg"]
        if msg is None:
            raise TransportError("the sbx mcp server has exited" + self._why())
        if "error" in msg:
            raise _rpc_error(msg["error"])
        return msg.get("result")

    # -- API --------------------------------------------------------------
    def call_tool(self, name: str, arguments: Dict[str, Any], on_progress: Optional[ProgressFn] = None) -> Dict[str, Any]:
        return _tool_result(self._request("tools/call", {"name": name, "arguments": arguments}, on_progress))

    def call_tool_content(self, name: str, arguments: Dict[str, Any]) -> Tuple[Dict[str, Any], list]:
        """structuredContent and the content items (images) of a tools/call."""
        r = self._request("tools/call", {"name": name, "arguments": arguments})
        return _tool_result(r), list(r.get("content", []))

    def list_tools(self) -> list:
        return self._request("tools/list", {}).get("tools", [])

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
        try:
            self._proc.stdin.close()
        except OSError:
            pass
        try:
            self._proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()


class HttpClient:
    """MCP Streamable HTTP against ``sbx serve`` (``url`` like
    http://127.0.0.1:7777/mcp). One connection per call, so calls from
    several threads run concurrently on the server."""

    def __init__(self, url: str, token: Optional[str] = None, timeout: Optional[float] = None):
        u = urllib.parse.urlsplit(url)
        if u.scheme not in ("http", "https") or not u.hostname:
            raise SbxError(f"not an http(s) URL: {url!r}", code="invalid_argument")
        self._u = u
        self._path = u.path or "/mcp"
        self._token = token if token is not None else os.environ.get("SBX_TOKEN")
        self._timeout = timeout
        self._ids = itertools.count(1)
        self._session: Optional[str] = None
        self.server_info = self._request(
            "initialize",
            {"protocolVersion": PROTOCOL_VERSION, "capabilities": {}, "clientInfo": CLIENT_INFO},
        )
        self._post({"jsonrpc": "2.0", "method": "notifications/initialized", "params": {}})

    def _conn(self) -> http.client.HTTPConnection:
        cls = http.client.HTTPSConnection if self._u.scheme == "https" else http.client.HTTPConnection
        return cls(self._u.hostname, self._u.port, timeout=self._timeout)

    def _headers(self) -> Dict[str, str]:
        h = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
        if self._session:
            h["Mcp-Session-Id"] = self._session
            h["MCP-Protocol-Version"] = PROTOCOL_VERSION
        if self._token:
            h["Authorization"] = f"Bearer {self._token.strip()}"
        return h

    def _post(self, msg: Dict[str, Any], on_progress: Optional[ProgressFn] = None) -> Optional[Dict[str, Any]]:
        body = json.dumps(msg).encode()
        c = self._conn()
        try:
            try:
                c.request("POST", self._path, body=body, headers=self._headers())
                r = c.getresponse()
            except OSError as e:
                raise TransportError(f"cannot reach {self._u.geturl()}: {e}") from e
            sid = r.getheader("Mcp-Session-Id")
            if sid and msg.get("method") == "initialize":
                self._session = sid
            ctype = (r.getheader("Content-Type") or "").split(";")[0].strip()
            if r.status == 202:
                r.read()
                return None
            if ctype == "text/event-stream":
                return self._read_sse(r, msg.get("id"), on_progress)
            data = r.read()
            if r.status >= 400 and ctype != "application/json":
                raise TransportError(f"HTTP {r.status} from {self._u.geturl()}: {data[:200].decode(errors='replace')}")
            try:
                reply = json.loads(data)
            except ValueError as e:
                raise TransportError(f"HTTP {r.status}: not JSON: {data[:200]!r}") from e
            if r.status >= 400 and "error" not in reply:
                raise TransportError(f"HTTP {r.status}: {reply}")
            return reply
        finally:
            c.close()

    def _read_sse(self, r, rid, on_progress) -> Optional[Dict[str, Any]]:
        data_lines: list = []
        reply = None
        while True:
            raw = r.readline()
            if not raw:
                break
            line = raw.decode("utf-8", errors="replace").rstrip("\r\n")
            if line.startswith("data:"):
                data_lines.append(line[5:].lstrip(" "))
                continue
            if line or not data_lines:
                continue
            try:
                msg = json.loads("\n".join(data_lines))
            except ValueError:
                msg = None
            data_lines = []
            if not isinstance(msg, dict):
                continue
            if msg.get("method") == "notifications/progress":
                p = msg.get("params") or {}
                if on_progress and isinstance(p.get("message"), str):
                    try:
                        on_progress(p["message"])
                    except Exception:
                        pass
            elif msg.get("id") == rid and ("result" in msg or "error" in msg):
                reply = msg
                break
        return reply

    def _request(self, method: str, params: Dict[str, Any], on_progress: Optional[ProgressFn] = None) -> Any:
        rid = next(self._ids)
        if on_progress is not None:
            params = dict(params, _meta={"progressToken": f"p{rid}"})
        reply = self._post({"jsonrpc": "2.0", "id": rid, "method": method, "params": params}, on_progress)
        if reply is None:
            raise TransportError(f"no response to {method} from {self._u.geturl()}")
        if "error" in reply:
            raise _rpc_error(reply["error"])
        return reply.get("result")

    def call_tool(self, name: str, arguments: Dict[str, Any], on_progress: Optional[ProgressFn] = None) -> Dict[str, Any]:
        return _tool_result(self._request("tools/call", {"name": name, "arguments": arguments}, on_progress))

    def call_tool_content(self, name: str, arguments: Dict[str, Any]) -> Tuple[Dict[str, Any], list]:
        """structuredContent and the content items (images) of a tools/call."""
        r = self._request("tools/call", {"name": name, "arguments": arguments})
        return _tool_result(r), list(r.get("content", []))

    def list_tools(self) -> list:
        return self._request("tools/list", {}).get("tools", [])

    def close(self) -> None:
        if not self._session:
            return
        c = self._conn()
        try:
            c.request("DELETE", self._path, headers=self._headers())
            c.getresponse().read()
        except OSError:
            pass
        finally:
            c.close()
            self._session = None


_default: Optional[StdioClient] = None
_default_lock = threading.Lock()


def default_client() -> StdioClient:
    """The process-wide ``sbx mcp`` child, started on first use."""
    global _default
    with _default_lock:
        if _default is None or _default._closed:
            _default = StdioClient()
        return _default


def connect(url: Optional[str] = None, token: Optional[str] = None):
    """A client: HTTP when url (or $SBX_URL) is given, else the shared stdio one."""
    url = url or os.environ.get("SBX_URL")
    if url:
        return HttpClient(url, token=token)
    return default_client()
