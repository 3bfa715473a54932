"""The code interpreter (docs/code.md): ``Sandbox.run_code`` and the code
contexts, over the MCP tools environment_run_code and environment_context_*.
The result types are shaped like E2B's code interpreter SDK (``Execution``,
``Result``, ``Logs``, ``ExecutionError``), so code written for it reads the
same."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Union

from .errors import InvalidArgument

# The fields of a result, each a str (png, jpeg and pdf are base64).
_FORMATS = ("text", "html", "markdown", "svg", "png", "jpeg", "pdf", "latex", "json", "javascript")


@dataclass
class Result:
    """One thing a cell displayed; the value of its last expression has
    ``is_main_result`` True. Images are base64 strings, as in E2B."""

    is_main_result: bool = False
    text: Optional[str] = None
    html: Optional[str] = None
    markdown: Optional[str] = None
    svg: Optional[str] = None
    png: Optional[str] = None
    jpeg: Optional[str] = None
    pdf: Optional[str] = None
    latex: Optional[str] = None
    json: Optional[Any] = None
    javascript: Optional[str] = None

    @classmethod
    def _of(cls, r: Dict[str, Any]) -> "Result":
        return cls(is_main_result=bool(r.get("is_main_result")), **{k: r.get(k) for k in _FORMATS})

    def formats(self) -> List[str]:
        """The formats it has: ["text", "png", ...]."""
        return [k for k in _FORMATS if getattr(self, k) is not None]


@dataclass
class Logs:
    stdout: List[str] = field(default_factory=list)
    stderr: List[str] = field(default_factory=list)


@dataclass
class ExecutionError:
    """The exception a cell raised (``KernelDied``: restart the context)."""

    name: str
    value: str
    traceback: str


@dataclass
class Execution:
    results: List[Result] = field(default_factory=list)
    logs: Logs = field(default_factory=Logs)
    error: Optional[ExecutionError] = None
    execution_count: Optional[int] = None
    context_id: Optional[str] = None
    timed_out: bool = False
    truncated: bool = False
    raw: Dict[str, Any] = field(default_factory=dict, repr=False)

    @property
    def text(self) -> Optional[str]:
        """The main result's text (the value of the last expression)."""
        for r in self.results:
            if r.is_main_result:
                return r.text
        return None

    @classmethod
    def _of(cls, sc: Dict[str, Any]) -> "Execution":
        e = sc.get("error")
        err = ExecutionError(e.get("name", ""), e.get("value", ""), e.get("traceback", "")) if e else None
        out, errs = sc.get("stdout", ""), sc.get("stderr", "")
        return cls(results=[Result._of(r) for r in sc.get("results", [])],
                   logs=Logs([out] if out else [], [errs] if errs else []), error=err,
                   execution_count=sc.get("execution_count"), context_id=sc.get("context_id"),
                   timed_out=bool(sc.get("timed_out")), truncated=bool(sc.get("truncated")), raw=sc)


@dataclass
class CodeContext:
    """A code context: its own kernel and state."""

    id: str
    language: str = "python"
    cwd: str = ""

    @property
    def context_id(self) -> str:
        return self.id

    @classmethod
    def _of(cls, c: Dict[str, Any]) -> "CodeContext":
        return cls(c.get("context_id", ""), c.get("language", ""), c.get("cwd", ""))


ContextRef = Union[str, CodeContext]


def _ctx_id(c: ContextRef) -> str:
    return c.id if isinstance(c, CodeContext) else str(c)


class CodeMixin:
    """The code methods of Sandbox (needs ``id`` and ``_call``)."""

    id: str
    _call: Callable[..., Dict[str, Any]]

    def run_code(
        self,
        code: str,
        language: Optional[str] = None,
        context: Optional[ContextRef] = None,
        timeout: Optional[float] = None,
        envs: Optional[Dict[str, str]] = None,
        on_stdout: Optional[Callable[[str], None]] = None,
        on_stderr: Optional[Callable[[str], None]] = None,
        on_result: Optional[Callable[[Result], None]] = None,
    ) -> Execution:
        """Run ``code`` in a stateful kernel (python by default; the
        language's default context, or ``context``) and wait: variables and
        imports stay for the next run in the same context. ``timeout``
        (seconds) interrupts the cell (``timed_out``), keeping the context.
        An exception the cell raised is ``.error``, not a raised exception.

        ``on_stdout`` gets the output as it streams (the server's progress
        notifications carry stdout and stderr together, in order);
        ``on_stderr`` gets the run's stderr once it is done, and
        ``on_result`` each result once it is done."""
        from .sandbox import _ms  # the one conversion of seconds

        if language is not None and context is not None:
            raise InvalidArgument("give language or context, not both (a context has its language)")
        args: Dict[str, Any] = {"environment_id": self.id, "code": code}
        if language is not None:
            args["language"] = language
        if context is not None:
            args["context_id"] = _ctx_id(context)
        if timeout is not None:
            args["timeout_ms"] = _ms(timeout, "timeout")
        if envs:
            args["env"] = dict(envs)
        ex = Execution._of(self._call("environment_run_code", args, on_stdout))
        if on_stderr and ex.logs.stderr:
            on_stderr("".join(ex.logs.stderr))
        if on_result:
            for r in ex.results:
                on_result(r)
        return ex

    def create_code_context(self, language: Optional[str] = None, cwd: Optional[str] = None) -> CodeContext:
        """A new context (language default python, cwd default the user's home)."""
        args: Dict[str, Any] = {"environment_id": self.id}
        if language is not None:
            args["language"] = language
        if cwd is not None:
            args["cwd"] = cwd
        return CodeContext._of(self._call("environment_context_create", args))

    def list_code_contexts(self) -> List[CodeContext]:
        sc = self._call("environment_context_list", {"environment_id": self.id})
        return [CodeContext._of(c) for c in sc.get("contexts", [])]

    def restart_code_context(self, context: ContextRef) -> None:
        """A fresh kernel for the context: its state is gone (a dead kernel too)."""
        self._call("environment_context_restart", {"environment_id": self.id, "context_id": _ctx_id(context)})

    def remove_code_context(self, context: ContextRef) -> None:
        """Shut the context's kernel down."""
        self._call("environment_context_remove", {"environment_id": self.id, "context_id": _ctx_id(context)})
