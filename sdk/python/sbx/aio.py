"""AsyncSandbox: the same API for asyncio code. Each call runs the blocking
client on a worker thread (asyncio.to_thread); the MCP clients are
thread-safe, so calls on several sandboxes overlap."""

from __future__ import annotations

import asyncio
from typing import Any, Dict, List, Optional, Tuple, Union

from .code import CodeContext, ContextRef, Execution
from .desktop import Screenshot
from .sandbox import CommandResult, Diff, Process, ReplayResult, Sandbox, Snapshot, SnapshotRef


class AsyncProcess:
    """A background process (``await commands.run(..., background=True)``),
    with the methods of ``Process`` as coroutines."""

    def __init__(self, p: Process):
        self.sync = p
        self.process_id = p.process_id
        self.id = p.id
        self.pid = p.pid

    async def status(self) -> Dict[str, Any]:
        return await asyncio.to_thread(self.sync.status)

    async def read(self, max_bytes: Optional[int] = None) -> Tuple[str, str]:
        return await asyncio.to_thread(self.sync.read, max_bytes)

    async def output(self) -> Tuple[str, str]:
        return await asyncio.to_thread(self.sync.output)

    async def wait(self, timeout: Optional[float] = None) -> CommandResult:
        return await asyncio.to_thread(self.sync.wait, timeout)

    async def kill(self, signal: Union[str, int] = "TERM") -> bool:
        return await asyncio.to_thread(self.sync.kill, signal)


class _AsyncCommands:
    def __init__(self, sb: Sandbox):
        self._sb = sb

    async def run(self, cmd, **kwargs: Any) -> Any:
        r = await asyncio.to_thread(self._sb.commands.run, cmd, **kwargs)
        return AsyncProcess(r) if isinstance(r, Process) else r

    async def list(self) -> List[Dict[str, Any]]:
        return await asyncio.to_thread(self._sb.commands.list)


class _AsyncFiles:
    def __init__(self, sb: Sandbox):
        self._sb = sb

    async def write(self, path: str, content, **kwargs: Any) -> int:
        return await asyncio.to_thread(self._sb.files.write, path, content, **kwargs)

    async def read(self, path: str, **kwargs: Any):
        return await asyncio.to_thread(self._sb.files.read, path, **kwargs)

    async def list(self, path: str):
        return await asyncio.to_thread(self._sb.files.list, path)


class AsyncSandbox:
    def __init__(self, sb: Sandbox):
        self.sync = sb
        self.id = sb.id
        self.snapshot_id = sb.snapshot_id
        self.commands = _AsyncCommands(sb)
        self.files = _AsyncFiles(sb)

    @classmethod
    async def create(cls, *args: Any, **kwargs: Any) -> "AsyncSandbox":
        return cls(await asyncio.to_thread(Sandbox.create, *args, **kwargs))

    @classmethod
    async def fork(cls, snapshot: SnapshotRef, **kwargs: Any) -> "AsyncSandbox":
        return cls(await asyncio.to_thread(Sandbox.fork, snapshot, **kwargs))

    @classmethod
    async def connect(cls, environment_id: str, **kwargs: Any) -> "AsyncSandbox":
        return cls(await asyncio.to_thread(Sandbox.connect, environment_id, **kwargs))

    async def snapshot(self, label: Optional[str] = None) -> Snapshot:
        return await asyncio.to_thread(self.sync.snapshot, label)

    async def restore(self, snapshot: SnapshotRef) -> float:
        return await asyncio.to_thread(self.sync.restore, snapshot)

    async def diff(self, snapshot: Optional[SnapshotRef] = None) -> Diff:
        return await asyncio.to_thread(self.sync.diff, snapshot)

    async def replay(self, trace_id: str) -> ReplayResult:
        return await asyncio.to_thread(self.sync.replay, trace_id)

    async def run_code(self, code: str, **kwargs: Any) -> Execution:
        """Sandbox.run_code; the callbacks run on the worker thread."""
        return await asyncio.to_thread(self.sync.run_code, code, **kwargs)

    async def create_code_context(self, language: Optional[str] = None, cwd: Optional[str] = None) -> CodeContext:
        return await asyncio.to_thread(self.sync.create_code_context, language, cwd)

    async def list_code_contexts(self) -> List[CodeContext]:
        return await asyncio.to_thread(self.sync.list_code_contexts)

    async def restart_code_context(self, context: ContextRef) -> None:
        await asyncio.to_thread(self.sync.restart_code_context, context)

    async def remove_code_context(self, context: ContextRef) -> None:
        await asyncio.to_thread(self.sync.remove_code_context, context)

    async def screenshot(self, display: Optional[int] = None) -> Screenshot:
        return await asyncio.to_thread(self.sync.screenshot, display)

    async def input(self, actions: List[Dict[str, Any]], display: Optional[int] = None) -> int:
        return await asyncio.to_thread(self.sync.input, actions, display)

    async def kill(self) -> None:
        await asyncio.to_thread(self.sync.kill)

    async def __aenter__(self) -> "AsyncSandbox":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        if self.sync._owned:
            await self.kill()
