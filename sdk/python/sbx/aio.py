"""AsyncSandbox: the same API for asyncio code. Each call runs the blocking
client on a worker thread (asyncio.to_thread); the MCP clients are
thread-safe, so calls on several sandboxes overlap."""

from __future__ import annotations

import asyncio
from typing import Any, Optional

from .sandbox import CommandResult, Diff, ReplayResult, Sandbox, Snapshot, SnapshotRef


class _AsyncCommands:
    def __init__(self, sb: Sandbox):
        self._sb = sb

    async def run(self, cmd, **kwargs: Any) -> CommandResult:
        return await asyncio.to_thread(self._sb.commands.run, cmd, **kwargs)


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

    async def kill(self) -> None:
        await asyncio.to_thread(self.sync.kill)

    async def __aenter__(self) -> "AsyncSandbox":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        if self.sync._owned:
            await self.kill()
