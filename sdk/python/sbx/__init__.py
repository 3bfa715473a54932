"""sbx: sandboxed, snapshot-able, traceable Linux environments for AI agents.

    from sbx import Sandbox
    with Sandbox.create(memory="512m") as sb:
        print(sb.commands.run("echo hi").stdout)

Talks MCP to ``sbx mcp`` (spawned on first use; the binary from $SBX or
PATH) or to ``sbx serve`` (``url=`` / $SBX_URL, ``token=`` / $SBX_TOKEN).
"""

from ._transport import HttpClient, StdioClient, connect, default_client
from .aio import AsyncSandbox
from .code import CodeContext, Execution, ExecutionError, Logs, Result
from .desktop import Screenshot
from .errors import (Conflict, Internal, InvalidArgument, LimitExceeded, NotFound, SbxError, TransportError,
                     Unavailable)
from .sandbox import CommandResult, Diff, FileEntry, Process, ReplayResult, Sandbox, Snapshot, parse_size

__version__ = "0.1.0"
__all__ = [
    "Sandbox", "AsyncSandbox", "CommandResult", "Process", "Snapshot", "Diff", "FileEntry", "ReplayResult",
    "SbxError", "NotFound", "InvalidArgument", "LimitExceeded", "Conflict", "Unavailable", "Internal",
    "TransportError", "StdioClient", "HttpClient", "connect", "default_client", "parse_size",
    "Execution", "Result", "Logs", "ExecutionError", "CodeContext", "Screenshot",
]
