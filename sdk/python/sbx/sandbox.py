"""Sandbox: one sbx environment, driven over MCP.

    from sbx import Sandbox
    with Sandbox.create(memory="512m", timeout=60) as sb:
        sb.files.write("/root/main.py", "print(6*7)")
        r = sb.commands.run("python3 /root/main.py")
        print(r.exit_code, r.stdout)

Durations are seconds (floats) and sizes are bytes or strings like "512m",
"2g"; they are converted to the milliseconds and bytes of the MCP tools
(API.md). Every method raises an SbxError subclass (NotFound,
InvalidArgument, LimitExceeded, Conflict, Unavailable, Internal) when sbx
could not do what was asked; a command that exits non-zero is a result,
not an error.
"""

from __future__ import annotations

import base64
import re
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, Union

from . import _transport
from .code import CodeMixin
from .desktop import DesktopMixin
from .errors import InvalidArgument

SnapshotRef = Union[str, "Snapshot"]
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)(i?b?)?\s*$", re.IGNORECASE)


def parse_size(v: Union[int, str, None], what: str) -> Optional[int]:
    """Bytes from an int or "512m" / "2G" / "100k" (powers of 1024)."""
    if v is None:
        return None
    if isinstance(v, bool):
        raise InvalidArgument(f"{what}: expected a size, got {v!r}")
    if isinstance(v, int):
        return v
    m = _SIZE.match(str(v))
    if not m:
        raise InvalidArgument(f"{what}: not a size: {v!r} (e.g. 512m, 2g, 1048576)")
    mult = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}[m.group(2).lower()]
    return int(float(m.group(1)) * mult)


def _ms(seconds: Optional[float], what: str) -> Optional[int]:
    if seconds is None:
        return None
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or seconds < 0:
        raise InvalidArgument(f"{what}: expected a number of seconds >= 0, got {seconds!r}")
    return int(round(seconds * 1000))


def _snap_id(s: SnapshotRef) -> str:
    return s.id if isinstance(s, Snapshot) else str(s)


@dataclass
class CommandResult:
    exit_code: Optional[int]  # None if killed by a signal
    stdout: str
    stderr: str
    signal: Optional[int] = None
    timed_out: bool = False
    oom_killed: bool = False
    stdout_truncated: bool = False
    stderr_truncated: bool = False
    duration_ms: int = 0
    trace_id: Optional[str] = None
    raw: Dict[str, Any] = field(default_factory=dict, repr=False)

    @property
    def ok(self) -> bool:
        return self.exit_code == 0

    @classmethod
    def _of(cls, sc: Dict[str, Any]) -> "CommandResult":
        return cls(
            exit_code=sc.get("exit_code"),
            stdout=sc.get("stdout", ""),
            stderr=sc.get("stderr", ""),
            signal=sc.get("signal"),
            timed_out=bool(sc.get("timed_out")),
            oom_killed=bool(sc.get("oom_killed")),
            stdout_truncated=bool(sc.get("stdout_truncated")),
            stderr_truncated=bool(sc.get("stderr_truncated")),
            duration_ms=int(sc.get("duration_ms") or 0),
            trace_id=sc.get("trace_id"),
            raw=sc,
        )


@dataclass
class Snapshot:
    id: str  # sha256:<hex>
    size_bytes: int = 0
    new_bytes: int = 0
    files: int = 0
    snapshot_ms: float = 0.0
    label: Optional[str] = None

    def __str__(self) -> str:
        return self.id


@dataclass
class FileEntry:
    name: str
    type: str  # file, dir, symlink, other
    size: int
    mode: int


@dataclass
class Diff:
    added: List[str]
    modified: List[str]
    deleted: List[str]


@dataclass
class ReplayResult:
    verdict: str  # "match" or "diverged"
    divergence: Optional[Dict[str, Any]]
    replay_ms: float
    raw: Dict[str, Any] = field(default_factory=dict, repr=False)

    @property
    def match(self) -> bool:
        return self.verdict == "match"


class Process:
    """A background command (``commands.run(..., background=True)``): it
    runs on inside the environment after the call returns, whoever started
    it (``commands.connect(process_id)`` attaches to one another client
    started). Its stdout and stderr are kept by sbx up to the environment's
    output limit (``stdout_truncated`` says when it was reached)."""

    _WAIT_SLICE_MS = 300000  # the most one environment_process_wait call waits

    def __init__(self, sb: "Sandbox", process_id: str, pid: int = 0):
        self._sb = sb
        self.process_id = process_id
        self.id = process_id
        self.pid = pid  # as seen inside the environment
        self._offsets = [0, 0]

    def _args(self, **extra: Any) -> Dict[str, Any]:
        return {"environment_id": self._sb.id, "process_id": self.process_id, **extra}

    def status(self) -> Dict[str, Any]:
        """The process's record now: state ("running" or "exited"),
        exit_code, signal, duration_ms, stdout_bytes, ... (no waiting)."""
        return self._sb._call("environment_process_wait", self._args(timeout_ms=0))

    @property
    def running(self) -> bool:
        return self.status().get("state") == "running"

    def read(self, max_bytes: Optional[int] = None) -> Tuple[str, str]:
        """(stdout, stderr) printed since the last read() (at most
        ``max_bytes`` of each per call)."""
        args = self._args(stdout_offset=self._offsets[0], stderr_offset=self._offsets[1])
        if max_bytes is not None:
            args["max_bytes"] = max_bytes
        sc = self._sb._call("environment_process_output", args)
        self._offsets = [int(sc.get("stdout_offset", 0)), int(sc.get("stderr_offset", 0))]
        return sc.get("stdout", ""), sc.get("stderr", "")

    def output(self) -> Tuple[str, str]:
        """Everything it printed so far (up to the output limit): (stdout, stderr)."""
        out, err, off = [], [], [0, 0]
        while True:
            sc = self._sb._call("environment_process_output",
                                self._args(stdout_offset=off[0], stderr_offset=off[1], max_bytes=262144))
            out.append(sc.get("stdout", ""))
            err.append(sc.get("stderr", ""))
            nxt = [int(sc.get("stdout_offset", 0)), int(sc.get("stderr_offset", 0))]
            more = (sc.get("stdout_more") and nxt[0] > off[0]) or (sc.get("stderr_more") and nxt[1] > off[1])
            off = nxt
            if not more:
                return "".join(out), "".join(err)

    def wait(self, timeout: Optional[float] = None) -> CommandResult:
        """Wait for it to exit (at most ``timeout`` seconds; None: for as
        long as it runs) and return its result with all its output. Raises
        TimeoutError if it is still running when the time is up."""
        deadline = None if timeout is None else time.monotonic() + max(0.0, float(timeout))
        while True:
            left = self._WAIT_SLICE_MS if deadline is None else int(max(0.0, deadline - time.monotonic()) * 1000)
            rec = self._sb._call("environment_process_wait",
                                 self._args(timeout_ms=min(left, self._WAIT_SLICE_MS)))
            if rec.get("state") == "exited":
                break
            if deadline is not None and time.monotonic() >= deadline:
                raise TimeoutError(f"process {self.process_id} is still running after {timeout} s")
        out, err = self.output()
        return CommandResult(
            exit_code=rec.get("exit_code"), stdout=out, stderr=err, signal=rec.get("signal"),
            timed_out=bool(rec.get("timed_out")), oom_killed=bool(rec.get("oom_killed")),
            stdout_truncated=bool(rec.get("stdout_truncated")), stderr_truncated=bool(rec.get("stderr_truncated")),
            duration_ms=int(rec.get("duration_ms") or 0), raw=rec)

    def kill(self, signal: Union[str, int] = "TERM") -> bool:
        """Send ``signal`` (a name such as "TERM", "KILL", "INT", or a
        number) to it and its process group; False if it had exited."""
        return bool(self._sb._call("environment_process_kill", self._args(signal=signal)).get("delivered"))

    def __repr__(self) -> str:
        return f"Process({self.process_id!r}, pid={self.pid})"


class Commands:
    """``sandbox.commands``: run commands."""

    def __init__(self, sb: "Sandbox"):
        self._sb = sb

    def list(self) -> List[Dict[str, Any]]:
        """The background processes' records, oldest first."""
        return self._sb._call("environment_process_list", {"environment_id": self._sb.id}).get("processes", [])

    def connect(self, process_id: str) -> Process:
        """A handle on a background process (e.g. one another client started)."""
        for rec in self.list():
            if rec.get("process_id") == process_id:
                return Process(self._sb, process_id, int(rec.get("pid") or 0))
        from .errors import NotFound

        raise NotFound(f"no such process: '{process_id}'")

    def run(
        self,
        cmd: Union[str, Sequence[str]],
        *,
        cwd: Optional[str] = None,
        env: Optional[Dict[str, str]] = None,
        stdin: Optional[str] = None,
        timeout: Optional[float] = None,
        trace: bool = False,
        deterministic: Optional[bool] = None,
        user: Optional[Union[str, int]] = None,
        on_output: Optional[Callable[[str], None]] = None,
        on_stdout: Optional[Callable[[str], None]] = None,
        background: bool = False,
    ) -> Any:
        """Run ``cmd`` (a string for /bin/sh -c, or an argv list) and wait.

        ``on_output`` (alias ``on_stdout``) is called with output as it is
        produced (stdout and stderr interleaved as the server streams it);
        the result still has both streams, separately and whole (up to the
        environment's output cap).

        ``background=True`` returns a ``Process`` at once instead (a server,
        a watcher): ``p.pid``, ``p.read()``, ``p.wait(timeout)``, ``p.kill()``.
        Only ``timeout`` bounds it (not the environment's default); no stdin,
        no trace."""
        args: Dict[str, Any] = {"environment_id": self._sb.id}
        if isinstance(cmd, str):
            args["command"] = cmd
        else:
            argv = list(cmd)
            if not argv or not all(isinstance(a, str) for a in argv):
                raise InvalidArgument("argv must be a non-empty list of strings")
            args["argv"] = argv
        if cwd is not None:
            args["cwd"] = cwd
        if env:
            args["env"] = dict(env)
        if stdin is not None:
            args["stdin"] = stdin
        if timeout is not None:
            args["timeout_ms"] = _ms(timeout, "timeout")
        if trace:
            args["trace"] = True
        if deterministic is not None:
            args["deterministic"] = bool(deterministic)
        if user is not None:
            args["user"] = user
        if background:
            if stdin is not None or trace or on_output or on_stdout:
                raise InvalidArgument("a background command takes no stdin, trace or output callback "
                                      "(read its output with Process.read())")
            args["background"] = True
            sc = self._sb._call("environment_execute", args)
            return Process(self._sb, sc["process_id"], int(sc.get("pid") or 0))
        cb = on_output or on_stdout
        return CommandResult._of(self._sb._call("environment_execute", args, cb))


class Files:
    """``sandbox.files``: read, write and list files inside."""

    def __init__(self, sb: "Sandbox"):
        self._sb = sb

    def write(self, path: str, content: Union[str, bytes], *, mode: Optional[int] = None) -> int:
        """Create or replace a file; returns the bytes written. bytes go as
        base64, so any content survives exactly."""
        args: Dict[str, Any] = {"environment_id": self._sb.id, "path": path}
        if isinstance(content, bytes):
            args["content"] = base64.b64encode(content).decode()
            args["encoding"] = "base64"
        else:
            args["content"] = content
        if mode is not None:
            args["mode"] = mode
        return int(self._sb._call("environment_write_file", args).get("bytes_written", 0))

    def read(self, path: str, *, binary: bool = False, max_bytes: Optional[int] = None) -> Union[str, bytes]:
        """A file's content: str (UTF-8), or bytes with binary=True."""
        args: Dict[str, Any] = {"environment_id": self._sb.id, "path": path}
        if binary:
            args["encoding"] = "base64"
        if max_bytes is not None:
            args["max_bytes"] = max_bytes
        sc = self._sb._call("environment_read_file", args)
        if sc.get("encoding") == "base64":
            data = base64.b64decode(sc.get("content", ""))
            return data if binary else data.decode("utf-8", errors="replace")
        text = sc.get("content", "")
        return text.encode() if binary else text

    def list(self, path: str) -> List[FileEntry]:
        sc = self._sb._call("environment_list_files", {"environment_id": self._sb.id, "path": path})
        return [FileEntry(e.get("name"), e.get("type"), int(e.get("size") or 0), int(e.get("mode") or 0))
                for e in sc.get("entries", [])]


class Sandbox(CodeMixin, DesktopMixin):
    """A live sbx environment. Create one with ``Sandbox.create``, fork one
    from a snapshot with ``Sandbox.fork``, attach to one with
    ``Sandbox.connect``. ``kill()`` (or leaving a ``with`` block) destroys it.
    ``run_code`` runs code in a stateful kernel (sbx/code.py); ``screenshot``
    and ``input`` look at and act on its X display (sbx/desktop.py)."""

    def __init__(self, environment_id: str, client=None, snapshot_id: Optional[str] = None,
                 create_ms: Optional[float] = None, owned: bool = True):
        self.id = environment_id
        self.snapshot_id = snapshot_id  # the base it was created from
        self.create_ms = create_ms
        self._client = client or _transport.default_client()
        self._owned = owned
        self._dead = False
        self.commands = Commands(self)
        self.files = Files(self)

    # -- construction -------------------------------------------------------
    @classmethod
    def create(
        cls,
        template: Optional[str] = None,
        *,
        snapshot: Optional[SnapshotRef] = None,
        policy: Union[str, Dict[str, Any], None] = None,
        memory: Union[int, str, None] = None,
        pids: Optional[int] = None,
        cpus: Optional[float] = None,
        timeout: Optional[float] = None,
        ttl: Optional[float] = None,
        output_limit: Union[int, str, None] = None,
        disk: Union[int, str, None] = None,
        network: Union[str, Dict[str, Any], None] = None,
        volumes: Optional[Sequence[Dict[str, Any]]] = None,
        env: Optional[Dict[str, str]] = None,
        name: Optional[str] = None,
        user: Optional[Union[str, int]] = None,
        url: Optional[str] = None,
        token: Optional[str] = None,
        client=None,
    ) -> "Sandbox":
        """A new environment. ``timeout`` is each command's default timeout
        (seconds), ``ttl`` the idle time after which it is destroyed;
        ``network`` is "none" (default), {"allow": ["host[:port]"]},
        "internet" (the egress proxy to every public host) or "open" (the
        host's network);
        ``volumes`` [{"host": DIR, "path": "/work", "readonly": True}]. With
        ``url`` (or $SBX_URL) it talks to ``sbx serve``; otherwise to an
        ``sbx mcp`` child started on first use."""
        client = client or _transport.connect(url, token)
        args: Dict[str, Any] = {}
        if template is not None:
            args["template"] = template
        if snapshot is not None:
            args["snapshot"] = _snap_id(snapshot)
        if policy is not None:
            args["policy"] = policy
        limits: Dict[str, Any] = {}
        for key, val in (("memory_bytes", parse_size(memory, "memory")), ("pids", pids), ("cpus", cpus),
                         ("timeout_ms", _ms(timeout, "timeout")), ("ttl_ms", _ms(ttl, "ttl")),
                         ("output_bytes", parse_size(output_limit, "output_limit")),
                         ("disk_bytes", parse_size(disk, "disk"))):
            if val is not None:
                limits[key] = val
        if limits:
            args["limits"] = limits
        if network is not None:
            args["network"] = network
        if volumes:
            args["volumes"] = [dict(v) for v in volumes]
        if env:
            args["env"] = dict(env)
        if name is not None:
            args["name"] = name
        if user is not None:
            args["user"] = user
        sc = client.call_tool("environment_create", args)
        return cls(sc["environment_id"], client, sc.get("snapshot_id"), sc.get("create_ms"))

    @classmethod
    def fork(cls, snapshot: SnapshotRef, **kwargs: Any) -> "Sandbox":
        """A new environment starting from ``snapshot`` (create(snapshot=...))."""
        return cls.create(snapshot=snapshot, **kwargs)

    @classmethod
    def connect(cls, environment_id: str, *, url: Optional[str] = None, token: Optional[str] = None,
                client=None) -> "Sandbox":
        """Attach to a live environment (by id or name). Leaving a ``with``
        block of an attached sandbox does not destroy it; ``kill()`` does."""
        client = client or _transport.connect(url, token)
        for e in client.call_tool("environment_list", {}).get("environments", []):
            if environment_id in (e.get("environment_id"), e.get("name")):
                return cls(e["environment_id"], client, e.get("snapshot_id"), owned=False)
        from .errors import NotFound

        raise NotFound(f"no such environment: '{environment_id}'")

    @staticmethod
    def list(*, url: Optional[str] = None, token: Optional[str] = None, client=None) -> List[Dict[str, Any]]:
        client = client or _transport.connect(url, token)
        return client.call_tool("environment_list", {}).get("environments", [])

    # -- operations -----------------------------------------------------------
    def _call(self, tool: str, args: Dict[str, Any], on_progress=None) -> Dict[str, Any]:
        return self._client.call_tool(tool, args, on_progress)

    def snapshot(self, label: Optional[str] = None) -> Snapshot:
        """Capture the filesystem (processes are frozen meanwhile)."""
        args: Dict[str, Any] = {"environment_id": self.id}
        if label is not None:
            args["label"] = label
        sc = self._call("environment_snapshot", args)
        return Snapshot(sc["snapshot_id"], int(sc.get("size_bytes") or 0), int(sc.get("new_bytes") or 0),
                        int(sc.get("files") or 0), float(sc.get("snapshot_ms") or 0), label)

    def restore(self, snapshot: SnapshotRef) -> float:
        """Roll back in place (processes end; the id stays). Returns restore_ms."""
        sc = self._call("environment_restore", {"environment_id": self.id, "snapshot_id": _snap_id(snapshot)})
        return float(sc.get("restore_ms") or 0)

    def diff(self, snapshot: Optional[SnapshotRef] = None) -> Diff:
        args: Dict[str, Any] = {"environment_id": self.id}
        if snapshot is not None:
            args["snapshot_id"] = _snap_id(snapshot)
        sc = self._call("environment_diff", args)
        return Diff(list(sc.get("added", [])), list(sc.get("modified", [])), list(sc.get("deleted", [])))

    def replay(self, trace_id: str) -> ReplayResult:
        """Re-run a traced command from its snapshot and compare."""
        sc = self._call("environment_replay", {"trace_id": trace_id})
        return ReplayResult(sc.get("verdict", ""), sc.get("divergence"), float(sc.get("replay_ms") or 0), sc)

    def kill(self) -> None:
        """Destroy the environment (idempotent)."""
        if self._dead:
            return
        self._call("environment_destroy", {"environment_id": self.id})
        self._dead = True

    def __enter__(self) -> "Sandbox":
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._owned:
            self.kill()

    def __repr__(self) -> str:
        return f"Sandbox({self.id!r})"
