"""Errors raised by the SDK. Each carries the MCP error code of API.md."""

from __future__ import annotations

from typing import Optional


class SbxError(Exception):
    """sbx could not do what was asked. ``code`` is one of API.md's codes
    (not_found, invalid_argument, limit_exceeded, conflict, unavailable,
    internal), or ``transport`` when the server could not be reached."""

    code = "internal"

    def __init__(self, message: str, code: Optional[str] = None, rpc_code: Optional[int] = None):
        super().__init__(message)
        self.message = message
        if code:
            self.code = code
        self.rpc_code = rpc_code

    def __str__(self) -> str:
        return f"{self.code}: {self.message}"


class NotFound(SbxError):
    code = "not_found"


class InvalidArgument(SbxError):
    code = "invalid_argument"


class LimitExceeded(SbxError):
    code = "limit_exceeded"


class Conflict(SbxError):
    code = "conflict"


class Unavailable(SbxError):
    code = "unavailable"


class Internal(SbxError):
    code = "internal"


class TransportError(SbxError):
    """The server could not be started or reached, or it went away."""

    code = "transport"


_BY_CODE = {c.code: c for c in (NotFound, InvalidArgument, LimitExceeded, Conflict, Unavailable, Internal)}
# JSON-RPC's standard codes, for errors that are not tool results.
_BY_RPC = {-32700: InvalidArgument, -32600: InvalidArgument, -32601: NotFound, -32602: InvalidArgument}


def from_code(code: Optional[str], message: str, rpc_code: Optional[int] = None) -> SbxError:
    cls = _BY_CODE.get(code or "") or _BY_RPC.get(rpc_code or 0) or SbxError
    return cls(message, code=code if code in _BY_CODE else None, rpc_code=rpc_code)
