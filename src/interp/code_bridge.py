"""sbx's code bridge: stateful Jupyter kernels behind E2B's code-interpreter HTTP API.

It runs INSIDE an environment, behind all its walls, as the environment's user, and listens on the
environment's own loopback only (127.0.0.1:49999 by default). sbx reaches it from outside through a
socket that init makes inside the environment's network namespace (docs/code.md); E2B's
`@e2b/code-interpreter` reaches the same API through the port proxy of `sbx serve`. Everything it
prints is untrusted input to sbx, which bounds it again on its side.

API (E2B's, plus the fields marked sbx):
  GET    /health                     200 "OK"
  GET    /ready                      (sbx) 200 "OK" while the default python context's kernel is alive and
                                     has run nothing (a warm pool's entry, docs/code.md), else 503
  POST   /execute                    {code, context_id?, language?, env_vars?, timeout_ms? (sbx),
                                      output_limit? (sbx)} -> newline-delimited JSON, in order:
         {"type":"context","context_id":"...","language":"..."}   (sbx: the context that ran it)
         {"type":"number_of_executions","execution_count":N}
         {"type":"stdout"|"stderr","text":"...","timestamp":"..."}
         {"type":"result","is_main_result":bool,"text"?,"html"?,"markdown"?,"svg"?,"png"?,"jpeg"?,
          "pdf"?,"latex"?,"json"?,"javascript"?,"data"?,"chart"?,"extra"?}
         {"type":"error","name":"...","value":"...","traceback":"..."}
         {"type":"timeout","timeout_ms":N}              (sbx: the cell was interrupted, state kept)
         {"type":"truncated","limit":N}                (sbx: output past output_limit was dropped)
         {"type":"end_of_execution"}
  POST   /contexts                   {language?, cwd?} -> {id, language, cwd}
  GET    /contexts                   [{id, language, cwd}]
  DELETE /contexts/{id}              204
  POST   /contexts/{id}/restart      204 (a dead kernel too)
Each language's default context (the one a run by language uses) has the language's name as its id
("python", "javascript"), fixed before its kernel starts: a client may name it (E2B's SDK lists default
contexts and runs in them by id) while its kernel starts only on first use. A run in it starts it; a
restart or remove of one not started is a no-op.
A kernel that dies is reported on the run that saw it (error name "KernelDied") and every later run in
that context answers the same until the context is restarted: its state is gone, and a silent restart
would hide that.

Standard library plus jupyter_client (Debian's python3-jupyter-client: it starts, interrupts and restarts kernels),
pyzmq (python3-zmq, which ipykernel needs: the bridge speaks to kernels over it directly) and a kernel
(python3-ipykernel), which starts through sbx's launcher (code_python.py, written beside this file as
.sbx-code-ipykernel_launcher.py). sbx's own kernels for javascript, typescript and bash (code_kernels.py and
code_node.js, written beside this file as .sbx-code-kernels.py and .sbx-code-node.js) are made known to
jupyter_client by kernel specs this bridge writes under its state directory (JUPYTER_PATH), each only
where what it drives is installed: node, bash with python3-pexpect.
"""

import datetime
import hashlib
import hmac
import http.server
import importlib.util
import json
import os
import re
import shutil
import signal
import socket
import socketserver
import sys
import threading
import time
import uuid

DEFAULT_OUTPUT_LIMIT = 10 << 20
MAX_REQUEST = 16 << 20
START_TIMEOUT = 60
# After an interrupt, how long the kernel may take to go idle before it is restarted.
INTERRUPT_GRACE = 5.0
# While no message comes, how often the kernel's liveness is checked (seconds).
ALIVE_CHECK = 0.1

# Jupyter MIME type -> E2B result field.
MIME_FIELDS = {
    "text/plain": "text",
    "text/html": "html",
    "text/markdown": "markdown",
    "image/svg+xml": "svg",
    "image/png": "png",
    "image/jpeg": "jpeg",
    "application/pdf": "pdf",
    "text/latex": "latex",
    "application/json": "json",
    "application/javascript": "javascript",
    "e2b/data": "data",
    "e2b/chart": "chart",
}

LANGUAGE_ALIASES = {"python3": "python", "py": "python", "js": "javascript", "ts": "typescript",
                    "sh": "bash", "shell": "bash"}


# sbx's kernels (code_kernels.py) and what each needs in the environment.
SBX_KERNELS = {
    "javascript": ("node", None, "node (Debian: nodejs)"),
    "typescript": ("node", None, "node (Debian: nodejs) and node-typescript"),
    "bash": ("bash", "pexpect", "bash and python3-pexpect"),
}
SHELL_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*$")


def install_kernel_specs(state_dir):
    """Writes the kernel specs of sbx's kernels whose needs are met under state_dir/kernels and puts
    state_dir first on JUPYTER_PATH. Returns {language: what it needs} for those left out."""
    here = os.path.dirname(os.path.abspath(__file__))
    module = os.path.join(here, ".sbx-code-kernels.py")
    missing = {}
    for lang, (program, pymod, needs) in SBX_KERNELS.items():
        if not os.path.exists(module) or not shutil.which(program) or (
                pymod and importlib.util.find_spec(pymod) is None):
            missing[lang] = needs
            continue
        d = os.path.join(state_dir, "kernels", "sbx-" + lang)
        os.makedirs(d, exist_ok=True)
        spec = {"argv": [sys.executable, module, lang, "-f", "{connection_file}"],
                "display_name": "sbx " + lang, "language": lang, "interrupt_mode": "signal"}
        with open(os.path.join(d, "kernel.json"), "w") as f:
            json.dump(spec, f)
    os.environ["JUPYTER_PATH"] = os.pathsep.join([state_dir] + [p for p in os.environ.get(
        "JUPYTER_PATH", "").split(os.pathsep) if p and p != state_dir])
    return missing


def fast_python(spec):
    """ipykernel's own spec (`PYTHON -m ipykernel_launcher ARGS`) started as `PYTHON code_python.py ARGS`
    instead, where that launcher is beside this file: ipykernel less three per-cell costs the bridge
    does not need (code_python.py). Any other spec is left as it is."""
    # Named so that the kernel's command line still says ipykernel_launcher (pgrep -f finds it).
    launcher = os.path.join(os.path.dirname(os.path.abspath(__file__)), ".sbx-code-ipykernel_launcher.py")
    argv = list(spec.argv)
    if argv[1:3] == ["-m", "ipykernel_launcher"] and os.path.exists(launcher):
        spec.argv = [argv[0], launcher] + argv[3:]


def env_code(language, env_vars):
    """(set, restore): silent code in `language` that sets env_vars for one run, then puts back what
    was there before; None where the language has no such code (the run is refused)."""
    if language == "python":
        return ("import os as _sbx_os\n_sbx_env_saved = {k: _sbx_os.environ.get(k) for k in %r}\n"
                "_sbx_os.environ.update(%r)" % (list(env_vars), dict(env_vars)),
                "for _k, _v in _sbx_env_saved.items():\n"
                "    (_sbx_os.environ.pop(_k, None) if _v is None else _sbx_os.environ.__setitem__(_k, _v))\n"
                "del _sbx_env_saved, _k, _v")
    if language in ("javascript", "typescript"):
        return ("globalThis.__sbxEnvSaved = Object.fromEntries(%s.map((k) => [k, process.env[k]]));\n"
                "Object.assign(process.env, %s);" % (json.dumps(list(env_vars)), json.dumps(env_vars)),
                "for (const [k, v] of Object.entries(globalThis.__sbxEnvSaved || {})) {\n"
                "  if (v === undefined) delete process.env[k]; else process.env[k] = v;\n"
                "}\ndelete globalThis.__sbxEnvSaved;")
    if language == "bash":
        bad = [k for k in env_vars if not SHELL_NAME.match(k)]
        if bad:
            raise BridgeError(400, "env_vars: '%s' is not a shell variable name" % bad[0][:100])
        names = " ".join(env_vars)
        quoted = lambda v: "'" + v.replace("'", "'\\''") + "'"
        return ("__sbx_env_saved=$(declare -p %s 2>/dev/null)\n" % names +
                "".join("export %s=%s\n" % (k, quoted(v)) for k, v in env_vars.items()),
                "unset %s\neval \"$__sbx_env_saved\"\nunset __sbx_env_saved\n" % names)
    return None


def normalize_language(language):
    lang = (language or "python").strip().lower()
    return LANGUAGE_ALIASES.get(lang, lang)


class BridgeError(Exception):
    def __init__(self, status, message):
        super().__init__(message)
        self.status = status


class KernelClient:
    """The bridge's end of one kernel's Jupyter messaging: its shell and iopub sockets over pyzmq, each
    message signed with the kernel's key. jupyter_client's own client is not used on this path: it costs
    milliseconds per cell (its session machinery, date parsing, a poll per message)."""

    def __init__(self, info):
        import zmq

        key = info["key"]
        self.key = key if isinstance(key, bytes) else key.encode()
        self.session = uuid.uuid4().hex
        zctx = zmq.Context.instance()
        url = "%s://%s:%%d" % (info.get("transport", "tcp"), info["ip"])
        self.shell = zctx.socket(zmq.DEALER)
        self.shell.linger = 0
        self.shell.connect(url % info["shell_port"])
        self.iopub = zctx.socket(zmq.SUB)
        self.iopub.linger = 0
        self.iopub.setsockopt(zmq.SUBSCRIBE, b"")
        self.iopub.connect(url % info["iopub_port"])

    def close(self):
        self.shell.close()
        self.iopub.close()

    def _sign(self, parts):
        h = hmac.new(self.key, digestmod=hashlib.sha256)
        for part in parts:
            h.update(part)
        return h.hexdigest().encode()

    def send(self, msg_type, content):
        msg_id = uuid.uuid4().hex
        header = {"msg_id": msg_id, "session": self.session, "username": "sbx", "msg_type": msg_type,
                  "version": "5.3", "date": datetime.datetime.now(datetime.timezone.utc).isoformat()}
        parts = [json.dumps(header).encode(), b"{}", b"{}", json.dumps(content).encode()]
        self.shell.send_multipart([b"<IDS|MSG>", self._sign(parts)] + parts)
        return msg_id

    def recv(self, sock):
        """The next message waiting on sock as (header, parent_header, content); None when none waits.
        A message with a wrong signature or shape is dropped (None too)."""
        import zmq

        try:
            frames = sock.recv_multipart(zmq.NOBLOCK)
        except zmq.Again:
            return None
        try:
            i = frames.index(b"<IDS|MSG>")
            sig, parts = frames[i + 1], frames[i + 2:i + 6]
            if len(parts) != 4 or not hmac.compare_digest(sig, self._sign(parts)):
                return None
            header, parent, content = json.loads(parts[0]), json.loads(parts[1]), json.loads(parts[3])
        except ValueError:
            return None
        if not isinstance(header, dict) or not isinstance(parent, dict) or not isinstance(content, dict):
            return None
        return header, parent, content

    def drain_shell(self):
        while self.recv(self.shell) is not None:
            pass

    def wait_ready(self, alive, timeout):
        """Until the kernel answers kernel_info on shell and iopub delivers (a SUB socket misses what is
        published before its subscription is through)."""
        import zmq

        deadline = time.monotonic() + timeout
        poller = zmq.Poller()
        poller.register(self.iopub, zmq.POLLIN)
        while time.monotonic() < deadline:
            if not alive():
                raise BridgeError(500, "the kernel exited while starting")
            self.send("kernel_info_request", {})
            # Its busy and idle status arrive on iopub once the subscription is through.
            if poller.poll(500):
                while self.recv(self.iopub) is not None:
                    pass
                self.drain_shell()
                return
        raise BridgeError(500, "the kernel did not answer within %g s" % timeout)


class Context:
    """One kernel: its manager (start, interrupt, restart), our client of it, one execution at a time."""

    def __init__(self, language, cwd, kernel_name, state_dir, cid=None):
        from jupyter_client import KernelManager  # imported here: the module loads in ~0.2 s

        self.id = cid or str(uuid.uuid4())
        self.language = language
        self.cwd = cwd
        self.lock = threading.Lock()
        self.dead = None  # why it died, once it has
        self.ran = False  # an execute came (GET /ready: a pristine kernel)
        self.kc = None
        env = dict(os.environ)
        # Kernel state files stay out of the user's home (snapshots and diffs would show them).
        env.setdefault("IPYTHONDIR", os.path.join(state_dir, "ipython"))
        env.setdefault("MPLCONFIGDIR", os.path.join(state_dir, "matplotlib"))
        env.setdefault("PYDEVD_DISABLE_FILE_VALIDATION", "1")
        env.pop("JPY_PARENT_PID", None)
        self.km = KernelManager(kernel_name=kernel_name)
        if language == "python":
            fast_python(self.km.kernel_spec)
        # Per cell, ipykernel writes its history database on disk (about half a cell's time, and files
        # left behind) and sleeps 0.5 ms so that clients which order output by the shell reply see the
        # streams first; the history is kept in memory instead (In, Out, _ and the execution count work
        # the same), and the bridge orders by iopub alone (the streams, results and the idle status
        # are all sent by the kernel's one iopub thread, in order), so it needs no sleep.
        extra = ["--InteractiveShell.colors=NoColor", "--HistoryManager.enabled=False",
                 "--IPythonKernel._execute_sleep=0"] if language == "python" else []
        self.km.start_kernel(cwd=cwd, env=env, extra_arguments=extra)
        try:
            self._connect()
        except Exception as e:
            self.shutdown()
            raise BridgeError(500, "kernel %s did not start: %s" % (kernel_name, e))

    def _connect(self):
        if self.kc:
            self.kc.close()
        self.kc = KernelClient(self.km.get_connection_info())
        self.kc.wait_ready(self.alive, START_TIMEOUT)

    def alive(self):
        proc = getattr(getattr(self.km, "provisioner", None), "process", None)
        return proc.poll() is None if proc is not None else self.km.is_alive()

    def info(self):
        return {"id": self.id, "language": self.language, "cwd": self.cwd}

    def shutdown(self):
        try:
            if self.kc:
                self.kc.close()
        except Exception:
            pass
        try:
            self.km.shutdown_kernel(now=True)
        except Exception:
            pass

    def _restart_locked(self):
        if self.km.is_alive():
            self.km.restart_kernel(now=True)
        else:
            self.km.start_kernel(**self.km._launch_args)
        self._connect()
        self.dead = None

    def restart(self):
        with self.lock:
            self._restart_locked()

    def _silent(self, code):
        """Runs bookkeeping code (env_vars) without output or history; waits for its reply."""
        import zmq

        msg_id = self.kc.send("execute_request", {"code": code, "silent": True, "store_history": False,
                                                  "user_expressions": {}, "allow_stdin": False,
                                                  "stop_on_error": False})
        deadline = time.monotonic() + 30
        poller = zmq.Poller()
        poller.register(self.kc.shell, zmq.POLLIN)
        while time.monotonic() < deadline:
            if not poller.poll(500):
                if not self.alive():
                    return
                continue
            reply = self.kc.recv(self.kc.shell)
            if reply and reply[1].get("msg_id") == msg_id:
                return

    def warm_up(self):
        with self.lock:
            self._silent("None")

    def execute(self, code, emit, env_vars=None, timeout_ms=None, client=None, flush=None):
        """Runs `code`, calling emit(dict) for each output in order. Returns when the kernel is idle.
        client: the requester's socket; its hanging up interrupts the cell. flush(): called whenever
        the kernel has no more messages waiting (what was emitted may go out as one write)."""
        self.ran = True
        if self.dead:
            emit({"type": "error", "name": "KernelDied", "value": self.dead + "; restart the context",
                  "traceback": ""})
            return
        env_set = env_restore = None
        if env_vars:
            codes = env_code(self.language, env_vars)
            if codes is None:
                raise BridgeError(400, "env_vars are not supported in %s contexts" % self.language)
            env_set, env_restore = codes
        with self.lock:
            if env_set:
                self._silent(env_set)
            try:
                self._run(code, emit, timeout_ms, client, flush)
            finally:
                if env_restore and not self.dead:
                    self._silent(env_restore)

    def interrupt(self):
        try:
            self.km.interrupt_kernel()
        except Exception:
            pass

    def _run(self, code, emit, timeout_ms, client, flush):
        import zmq

        kc = self.kc
        # Leftovers of an earlier run (replies, late iopub messages) are not this run's.
        kc.drain_shell()
        while kc.recv(kc.iopub) is not None:
            pass
        msg_id = kc.send("execute_request", {"code": code, "silent": False, "store_history": True,
                                             "user_expressions": {}, "allow_stdin": False,
                                             "stop_on_error": True})
        deadline = time.monotonic() + timeout_ms / 1000.0 if timeout_ms else None
        interrupted_at = None
        started = False
        poller = zmq.Poller()
        poller.register(kc.iopub, zmq.POLLIN)
        # A plain socket is polled by its fd (and reported by it).
        client_fd = client.fileno() if client is not None else None
        if client_fd is not None:
            poller.register(client_fd, zmq.POLLIN)
        while True:
            if flush:
                flush()
            wait = ALIVE_CHECK
            if deadline and interrupted_at is None:
                wait = max(0.0, min(wait, deadline - time.monotonic()))
            ready = dict(poller.poll(wait * 1000))
            if client_fd is not None and client_fd in ready:
                # Readable: it hung up (then stop the cell, keep the kernel), or it sent more (a
                # pipelined request: not a hang-up). Either way it is not watched again.
                poller.unregister(client_fd)
                client_fd = None
                if client_gone(client) and interrupted_at is None:
                    self.interrupt()
                    interrupted_at = time.monotonic()
            if kc.iopub not in ready:
                now = time.monotonic()
                if not self.alive():
                    self.dead = "the kernel died" + exit_description(self.km)
                    emit({"type": "error", "name": "KernelDied", "value": self.dead + "; restart the context",
                          "traceback": ""})
                    return
                if deadline and interrupted_at is None and now >= deadline:
                    emit({"type": "timeout", "timeout_ms": timeout_ms})
                    self.interrupt()
                    interrupted_at = now
                elif interrupted_at is not None and now - interrupted_at > INTERRUPT_GRACE:
                    # It ignores interrupts (a C loop, a handler that swallows them): its state is lost.
                    self._restart_locked()
                    emit({"type": "error", "name": "KernelRestarted",
                          "value": "the cell ignored the interrupt for %g s; the kernel was restarted and its "
                                   "state is lost" % INTERRUPT_GRACE, "traceback": ""})
                    return
                continue
            while True:
                msg = kc.recv(kc.iopub)
                if msg is None:
                    break
                header, parent, content = msg
                if parent.get("msg_id") != msg_id:
                    continue
                kind = header.get("msg_type")
                if kind == "execute_input":
                    started = True
                    emit({"type": "number_of_executions", "execution_count": content.get("execution_count")})
                elif kind == "stream":
                    name = "stderr" if content.get("name") == "stderr" else "stdout"
                    emit({"type": name, "text": content.get("text", ""), "timestamp": str(header.get("date", ""))})
                elif kind in ("execute_result", "display_data"):
                    emit(result_message(content.get("data", {}), kind == "execute_result"))
                elif kind == "error":
                    emit({"type": "error", "name": content.get("ename", ""), "value": content.get("evalue", ""),
                          "traceback": "\n".join(content.get("traceback", []))})
                elif kind == "status" and content.get("execution_state") == "idle" and started:
                    kc.drain_shell()
                    return


def client_gone(sock):
    """Whether a readable client socket hung up (EOF or an error), not merely sent more."""
    try:
        return sock.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT) == b""
    except BlockingIOError:
        return False
    except OSError:
        return True


def exit_description(km):
    proc = getattr(getattr(km, "provisioner", None), "process", None)
    rc = proc.poll() if proc is not None else None
    if rc is None:
        return ""
    if rc < 0:
        try:
            return " (killed by %s)" % signal.Signals(-rc).name
        except ValueError:
            return " (killed by signal %d)" % -rc
    return " (exit status %d)" % rc


def result_message(data, is_main):
    out = {"type": "result", "is_main_result": is_main}
    extra = {}
    for mime, value in data.items():
        field = MIME_FIELDS.get(mime)
        if field:
            out[field] = value
        else:
            extra[mime] = value
    if extra:
        out["extra"] = extra
    return out


class Bridge:
    def __init__(self, state_dir, default_cwd):
        self.state_dir = state_dir
        self.default_cwd = default_cwd
        self.contexts = {}
        self.defaults = {}  # language -> context id
        self.lock = threading.Lock()
        self.missing = install_kernel_specs(state_dir)  # language -> what its kernel needs

    def kernel_for(self, language):
        from jupyter_client.kernelspec import KernelSpecManager

        if language in self.missing:  # installed since? (an agent's apt-get install nodejs)
            self.missing = install_kernel_specs(self.state_dir)
        specs = KernelSpecManager().get_all_specs()
        if language == "python" and "python3" in specs:
            return "python3"
        if "sbx-" + language in specs:  # sbx's own, whose env_vars code the bridge knows
            return "sbx-" + language
        for name, s in sorted(specs.items()):
            if normalize_language(s["spec"].get("language")) == language:
                return name
        if language in self.missing:
            raise BridgeError(400, "no kernel for language '%s': it needs %s in the environment" % (
                language, self.missing[language]))
        raise BridgeError(400, "no kernel for language '%s' is installed (have: %s)" % (
            language, ", ".join(sorted({normalize_language(s["spec"].get("language")) for s in specs.values()}))))

    def _make(self, language, cwd, cid=None):
        language = normalize_language(language)
        cwd = cwd or self.default_cwd
        if not os.path.isdir(cwd):
            raise BridgeError(400, "cwd '%s' is not a directory" % cwd)
        return Context(language, cwd, self.kernel_for(language), self.state_dir, cid)

    def create(self, language, cwd):
        ctx = self._make(language, cwd)
        with self.lock:
            self.contexts[ctx.id] = ctx
        return ctx

    def default(self, language):
        language = normalize_language(language)
        with self.lock:
            cid = self.defaults.get(language)
            existing = self.contexts.get(cid)
        if existing:
            # A default kernel started ahead (a warm pool's entry) that died before anything ran in
            # it has no state to lose: it is restarted rather than reported dead.
            if not existing.ran and not existing.alive():
                existing.restart()
            return existing
        ctx = self._make(language, None, cid=language)  # its id is its language's: see the API above
        with self.lock:
            other = self.contexts.get(ctx.id)
            if not other:
                self.contexts[ctx.id] = ctx
                self.defaults[language] = ctx.id
        if other:  # another request made it meanwhile
            ctx.shutdown()
            return other
        return ctx

    def is_default_id(self, cid):
        """A default context's id (a language's name) whose kernel has not started."""
        with self.lock:
            started = cid in self.contexts
        return not started and (cid == "python" or cid in SBX_KERNELS)

    def pristine_default(self):
        """The default python context, if its kernel is alive and nothing has run in it (or None)."""
        with self.lock:
            ctx = self.contexts.get(self.defaults.get("python"))
        return ctx if ctx and not ctx.ran and not ctx.dead and ctx.alive() else None

    def get(self, cid):
        if self.is_default_id(cid):
            return self.default(cid)
        with self.lock:
            ctx = self.contexts.get(cid)
        if not ctx:
            raise BridgeError(404, "Context %s not found" % cid)
        return ctx

    def restart(self, cid):
        if self.is_default_id(cid):  # a fresh kernel is what a restart gives
            return
        self.get(cid).restart()

    def remove(self, cid):
        if self.is_default_id(cid):  # nothing started: the default is there again for the next run
            return
        with self.lock:
            ctx = self.contexts.pop(cid, None)
            for lang, d in list(self.defaults.items()):
                if d == cid:
                    del self.defaults[lang]
        if not ctx:
            raise BridgeError(404, "Context %s not found" % cid)
        ctx.shutdown()


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "sbx-code-bridge"
    bridge = None  # set by main

    def setup(self):
        super().setup()
        # Streamed lines are small writes: without this, Nagle and the client's delayed ACK hold
        # each one for 40 ms.
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def log_message(self, fmt, *args):  # stderr is the background process's log; keep it quiet
        pass

    def send_json(self, status, body):
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def send_text(self, status, text):
        data = text.encode()
        self.send_response(status)
        self.send_header("Content-Type", "text/plain; charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def send_empty(self, status=204):
        self.send_response(status)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def read_json(self):
        n = self.headers.get("Content-Length")
        if n is None or not n.isdigit():
            raise BridgeError(411, "a JSON body with Content-Length is required")
        if int(n) > MAX_REQUEST:
            self.close_connection = True
            raise BridgeError(413, "request body over %d bytes" % MAX_REQUEST)
        raw = self.rfile.read(int(n)) if int(n) else b"{}"
        try:
            body = json.loads(raw or b"{}")
        except ValueError as e:
            raise BridgeError(400, "invalid JSON: %s" % e)
        if not isinstance(body, dict):
            raise BridgeError(400, "the body must be a JSON object")
        return body

    def route(self, method):
        path = self.path.split("?", 1)[0]
        parts = [p for p in path.split("/") if p]
        try:
            if method == "GET" and parts == ["health"]:
                return self.send_json(200, "OK")
            if method == "GET" and parts == ["ready"]:
                ctx = self.bridge.pristine_default()
                return self.send_json(200, "OK") if ctx else self.send_text(503, "not ready")
            if method == "POST" and parts == ["execute"]:
                return self.execute(self.read_json())
            if parts == ["contexts"] and method == "POST":
                body = self.read_json()
                ctx = self.bridge.create(body.get("language"), body.get("cwd"))
                return self.send_json(200, ctx.info())
            if parts == ["contexts"] and method == "GET":
                with self.bridge.lock:
                    infos = [c.info() for c in self.bridge.contexts.values()]
                return self.send_json(200, infos)
            if len(parts) == 2 and parts[0] == "contexts" and method == "DELETE":
                self.bridge.remove(parts[1])
                return self.send_empty()
            if len(parts) == 3 and parts[0] == "contexts" and parts[2] == "restart" and method == "POST":
                self.bridge.restart(parts[1])
                return self.send_empty()
            raise BridgeError(404, "no route %s %s" % (method, path))
        except BridgeError as e:
            self.send_text(e.status, str(e))
        except Exception as e:  # a failure of ours, said as such, and the server lives on
            self.send_text(500, "%s: %s" % (type(e).__name__, e))

    def do_GET(self):
        self.route("GET")

    def do_POST(self):
        self.route("POST")

    def do_DELETE(self):
        self.route("DELETE")

    def execute(self, body):
        code = body.get("code")
        if not isinstance(code, str):
            raise BridgeError(400, "code must be a string")
        if body.get("context_id") and body.get("language"):
            raise BridgeError(400, "Only one of context_id or language can be provided")
        env_vars = body.get("env_vars") or None
        if env_vars is not None and (not isinstance(env_vars, dict) or
                                     not all(isinstance(k, str) and isinstance(v, str) for k, v in env_vars.items())):
            raise BridgeError(400, "env_vars must map strings to strings")
        timeout_ms = body.get("timeout_ms")
        if timeout_ms is not None and (not isinstance(timeout_ms, int) or timeout_ms <= 0):
            raise BridgeError(400, "timeout_ms must be a positive integer")
        limit = body.get("output_limit", DEFAULT_OUTPUT_LIMIT)
        if not isinstance(limit, int) or limit <= 0:
            raise BridgeError(400, "output_limit must be a positive integer")
        ctx = self.bridge.get(body["context_id"]) if body.get("context_id") else self.bridge.default(
            body.get("language"))

        # What goes out is gathered and written once per batch of kernel messages (the head with the
        # first lines, the last lines with the end): each write wakes the client, a round trip under load.
        self.send_response(200)
        self.send_header("Content-Type", "application/x-ndjson")
        self.send_header("Transfer-Encoding", "chunked")
        self._headers_buffer.append(b"\r\n")
        pending = [b"".join(self._headers_buffer)]
        self._headers_buffer = []
        state = {"sent": 0, "truncated": False, "gone": False, "urgent": False}

        def write_line(obj):
            line = (json.dumps(obj) + "\n").encode()
            pending.append(b"%x\r\n%s\r\n" % (len(line), line))
            # Output goes out with this batch; what says where it runs waits for the next.
            state["urgent"] = state["urgent"] or obj["type"] not in ("context", "number_of_executions")

        def flush(force=False):
            if not pending or not (force or state["urgent"]):
                return
            data = b"".join(pending)
            pending.clear()
            state["urgent"] = False
            if state["gone"]:
                return
            try:
                self.wfile.write(data)
            except OSError:
                state["gone"] = True  # the client left: stop the cell, keep the kernel
                ctx.interrupt()

        def emit(obj):
            if obj["type"] in ("stdout", "stderr", "result"):
                size = len(json.dumps(obj))
                if state["truncated"]:
                    return
                if state["sent"] + size > limit:
                    # What fits of a stream's text is kept (its JSON escaping counted), then the rest dropped.
                    room = limit - state["sent"]
                    if obj["type"] != "result" and room > 256:
                        part = dict(obj, text=obj["text"][:room - 64])
                        while len(part["text"]) and len(json.dumps(part)) > room:
                            part["text"] = part["text"][:len(part["text"]) * 3 // 4]
                        if part["text"]:
                            state["sent"] += len(json.dumps(part))
                            write_line(part)
                    state["truncated"] = True
                    write_line({"type": "truncated", "limit": limit})
                    return
                state["sent"] += size
            write_line(obj)

        write_line({"type": "context", "context_id": ctx.id, "language": ctx.language})  # sbx
        try:
            ctx.execute(code, emit, env_vars=env_vars, timeout_ms=timeout_ms, client=self.connection, flush=flush)
        except BridgeError as e:
            write_line({"type": "error", "name": "BridgeError", "value": str(e), "traceback": ""})
        except Exception as e:
            write_line({"type": "error", "name": type(e).__name__, "value": str(e), "traceback": ""})
        write_line({"type": "end_of_execution"})
        pending.append(b"0\r\n\r\n")
        flush(force=True)
        if state["gone"]:
            self.close_connection = True


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True


def default_cwd():
    """Where a context starts when none is asked: E2B's /home/user in an environment that has E2B's
    user (uid 1000 `user`, home /home/user: a sandbox of sbx serve, where E2B's kernels start there),
    else this process's home."""
    import pwd

    try:
        e2b = pwd.getpwnam("user")
        if e2b.pw_uid == 1000 and e2b.pw_dir == "/home/user" and os.path.isdir(e2b.pw_dir):
            return e2b.pw_dir
    except KeyError:
        pass
    return os.path.expanduser("~")


def main(argv):
    import argparse

    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--port", type=int, default=49999)
    p.add_argument("--state-dir", default="/tmp/.sbx-code")
    p.add_argument("--cwd", default=None, help="contexts' default working directory (default: see default_cwd)")
    p.add_argument("--no-default", action="store_true", help="start no python context ahead")
    a = p.parse_args(argv)
    os.makedirs(a.state_dir, mode=0o700, exist_ok=True)
    os.environ.setdefault("JUPYTER_RUNTIME_DIR", os.path.join(a.state_dir, "runtime"))
    cwd = a.cwd or default_cwd()
    bridge = Bridge(a.state_dir, cwd if os.path.isdir(cwd) else "/")
    Handler.bridge = bridge
    if not a.no_default:
        # One silent cell (no output, no history, the execution count unchanged): a kernel's first
        # execute costs several ms more than later ones, paid here rather than by the first run.
        bridge.default("python").warm_up()
    # Listening only once the default kernel is ready: a connect that succeeds means ready.
    try:
        server = Server(("127.0.0.1", a.port), Handler)
    except OSError as e:
        # Another bridge took the port first (two first calls at once): its starter's caller finds it
        # answering. This one's kernels must not outlive it.
        for ctx in list(bridge.contexts.values()):
            ctx.shutdown()
        print("sbx-code-bridge: listen on 127.0.0.1:%d: %s" % (a.port, e), file=sys.stderr, flush=True)
        sys.exit(1)
    print(json.dumps({"ready": True, "port": server.server_address[1]}), flush=True)

    def stop(signum, frame):
        threading.Thread(target=server.shutdown, daemon=True).start()

    signal.signal(signal.SIGTERM, stop)
    try:
        server.serve_forever(poll_interval=0.5)
    finally:
        for ctx in list(bridge.contexts.values()):
            ctx.shutdown()


if __name__ == "__main__":
    main(sys.argv[1:])
