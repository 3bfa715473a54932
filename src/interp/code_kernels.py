"""sbx's Jupyter kernels for JavaScript, TypeScript and bash: wrapper kernels on ipykernel's Kernel.

They run INSIDE an environment, started by the code bridge (code_bridge.py, which writes their
kernel.json specs) as
    python3 code_kernels.py javascript|typescript|bash -f CONNECTION_FILE
and listen, as ipykernel does, on the environment's loopback only. Each drives one persistent child
that holds the context's state:
  javascript, typescript: `node --expose-internals code_node.js` (the file beside this one), one cell
      at a time over a socket; the cell's stdout and stderr are node's own pipes, streamed as they come.
  bash: an interactive `bash --norc --noprofile` on a pty (python3-pexpect), each cell sourced from a
      file, its end and exit status told by a prompt no output can guess.
An interrupt (SIGINT to the kernel, as jupyter_client sends one) is passed on to the child: node stops
the running cell, bash gets ^C on its terminal; the child and its state live on. A child that exits
(process.exit(), `exit`) ends the kernel with its status, which the bridge reports as KernelDied.

Needs: python3-ipykernel; node (Debian's nodejs) for javascript, plus node-typescript for
typescript; bash and python3-pexpect for bash.
"""

import codecs
import json
import os
import re
import selectors
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid

from ipykernel.kernelbase import Kernel

HERE = os.path.dirname(os.path.abspath(__file__))
NODE_EVAL = os.path.join(HERE, ".sbx-code-node.js")
# Where Debian and npm put modules, searched after the cell's own node_modules.
NODE_PATHS = ["/usr/share/nodejs", "/usr/lib/nodejs", "/usr/local/lib/node_modules", "/usr/lib/node_modules"]


def ok_reply(kernel):
    return {"status": "ok", "execution_count": kernel.execution_count, "payload": [], "user_expressions": {}}


def error_reply(kernel, silent, ename, evalue, traceback):
    content = {"ename": ename, "evalue": evalue, "traceback": traceback}
    if not silent:
        kernel.send_response(kernel.iopub_socket, "error", content)
    return dict(content, status="error", execution_count=kernel.execution_count)


def die_with_kernel():
    """In the child before exec: SIGKILL when the kernel dies (killed by a restart or the bridge's
    end), so that no node or bash outlives it, a busy one included (it would never see its
    socket or pty close)."""
    import ctypes

    PR_SET_PDEATHSIG = 1
    ctypes.CDLL(None).prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)


def spawn_with_sigint(start):
    """start()'s child with SIGINT at its default: the kernel app ignores it outside a cell, and an
    ignored signal stays ignored across exec (bash would pass that on to every command it runs)."""
    saved = signal.signal(signal.SIGINT, signal.SIG_DFL)
    try:
        return start()
    finally:
        signal.signal(signal.SIGINT, saved)


def end_kernel(status):
    """The child holding the state is gone: so is the kernel, the same way (its exit status, or
    killed by the same signal), once its output has had time to go out."""
    time.sleep(0.2)
    if isinstance(status, int) and status < 0:
        try:
            signal.signal(-status, signal.SIG_DFL)  # refused for SIGKILL and SIGSTOP, never caught
        except (OSError, ValueError):
            pass
        os.kill(os.getpid(), -status)
    os._exit(status if isinstance(status, int) and 0 < status < 256 else 1)


class NodeKernel(Kernel):
    implementation = "sbx-javascript"
    implementation_version = "1"
    language = "javascript"
    banner = "sbx JavaScript kernel (node)"

    @property
    def language_info(self):
        if self.language == "typescript":
            return {"name": "typescript", "mimetype": "text/typescript", "file_extension": ".ts"}
        return {"name": "javascript", "mimetype": "text/javascript", "file_extension": ".js"}

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.next_id = 0
        parent, child = socket.socketpair()
        env = dict(os.environ)
        env["SBX_NODE_CTL_FD"] = str(child.fileno())
        env["NODE_PATH"] = ":".join([p for p in env.get("NODE_PATH", "").split(":") if p] + NODE_PATHS)
        env.setdefault("NODE_DISABLE_COLORS", "1")
        # Its own session: only this kernel signals it (jupyter_client signals the kernel's group).
        self.node = spawn_with_sigint(lambda: subprocess.Popen(
            ["node", "--expose-internals", NODE_EVAL], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, env=env, pass_fds=[child.fileno()], start_new_session=True,
            preexec_fn=die_with_kernel))
        child.close()
        self.ctl = parent
        self.ctl_buf = b""
        for f in (self.node.stdout, self.node.stderr):
            os.set_blocking(f.fileno(), False)
        self.decoders = {name: codecs.getincrementaldecoder("utf-8")("replace") for name in ("stdout", "stderr")}
        self.sel = selectors.DefaultSelector()
        self.sel.register(self.node.stdout, selectors.EVENT_READ, "stdout")
        self.sel.register(self.node.stderr, selectors.EVENT_READ, "stderr")
        self.sel.register(self.ctl, selectors.EVENT_READ, "ctl")

    def _stream(self, name, f, silent):
        """Passes on what waits on one of node's pipes; False once none waits (or at its end)."""
        try:
            data = os.read(f.fileno(), 1 << 16)
        except BlockingIOError:
            return False
        if not data:
            self.sel.unregister(f)
            return False
        text = self.decoders[name].decode(data)
        if text and not silent:
            self.send_response(self.iopub_socket, "stream", {"name": name, "text": text})
        return True

    def _drain(self, silent):
        for key in list(self.sel.get_map().values()):
            if key.data != "ctl":
                while self._stream(key.data, key.fileobj, silent):
                    pass

    def _node_gone(self, silent):
        """node exited (process.exit(), a crash, the OOM killer): what it wrote goes out, then the
        kernel ends with its status, as its state is gone."""
        self._drain(silent)
        end_kernel(self.node.wait())

    def do_execute(self, code, silent, store_history=True, user_expressions=None, allow_stdin=False, **kwargs):
        self.next_id += 1
        req = {"id": self.next_id, "code": code, "lang": self.language,
               "cell": 0 if silent else self.execution_count}  # names the cell's frames
        try:
            self.ctl.sendall(json.dumps(req).encode() + b"\n")
        except OSError:
            self._node_gone(silent)
        answer = None
        while answer is None:
            try:
                for key, _ in self.sel.select(0.5):
                    if key.data == "ctl":
                        try:
                            data = self.ctl.recv(1 << 20)
                        except OSError:  # ECONNRESET: it died with a request unread
                            data = b""
                        if not data:
                            self._node_gone(silent)
                        self.ctl_buf += data
                        while b"\n" in self.ctl_buf:
                            line, self.ctl_buf = self.ctl_buf.split(b"\n", 1)
                            msg = json.loads(line)
                            if msg.get("id") == self.next_id:
                                answer = msg
                    else:
                        self._stream(key.data, key.fileobj, silent)
            except KeyboardInterrupt:
                # The cell is stopped, not node: its answer comes (an Interrupted error).
                try:
                    os.kill(self.node.pid, signal.SIGINT)
                except ProcessLookupError:
                    pass
        # All the cell wrote is in the pipes already (node writes them synchronously).
        self._drain(silent)
        if not answer.get("ok"):
            return error_reply(self, silent, answer.get("ename", "Error"), answer.get("evalue", ""),
                               answer.get("traceback", []))
        if "text" in answer and not silent:
            self.send_response(self.iopub_socket, "execute_result", {
                "execution_count": self.execution_count, "data": {"text/plain": answer["text"]}, "metadata": {}})
        return ok_reply(self)

    def do_shutdown(self, restart):
        try:
            self.node.kill()
        except OSError:
            pass
        return {"status": "ok", "restart": restart}


class TypeScriptKernel(NodeKernel):
    implementation = "sbx-typescript"
    language = "typescript"
    banner = "sbx TypeScript kernel (node, node-typescript's transpiler)"


class BashKernel(Kernel):
    implementation = "sbx-bash"
    implementation_version = "1"
    language = "bash"
    language_info = {"name": "bash", "mimetype": "text/x-sh", "file_extension": ".sh"}
    banner = "sbx bash kernel"

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        import pexpect

        self.pexpect = pexpect
        # Beside the kernel's connection file (the bridge's state directory), not in the user's /tmp.
        runtime = os.environ.get("JUPYTER_RUNTIME_DIR")
        if runtime:
            try:
                os.makedirs(runtime, mode=0o700, exist_ok=True)
            except OSError:
                runtime = None
        self.dir = tempfile.mkdtemp(prefix="sbx-bash-", dir=runtime or None)
        self.cell = os.path.join(self.dir, "cell")
        self.marker = "SBXPROMPT" + uuid.uuid4().hex
        self.prompt = re.compile(re.escape(self.marker) + r":(\d+):")
        env = dict(os.environ, TERM="dumb", PS1="$ ", PROMPT_COMMAND="")
        env.pop("HISTFILE", None)
        self.child = spawn_with_sigint(lambda: pexpect.spawn(
            "bash", ["--norc", "--noprofile", "--noediting", "-i"], echo=False, encoding="utf-8",
            codec_errors="replace", env=env, dimensions=(50, 500), preexec_fn=die_with_kernel))
        # $? expands when the prompt is shown: the status of the cell's last command.
        self.child.sendline("unset HISTFILE; set +o history; PROMPT_COMMAND=; PS2=; PS1='%s:$?:'" % self.marker)
        self.child.expect(self.prompt, timeout=30)

    def _held(self, buf):
        """How many characters at buf's end may be the start of the prompt (or of a \\r\\n)."""
        i = buf.find(self.marker)
        if i >= 0:
            return len(buf) - i
        for k in range(min(len(self.marker) - 1, len(buf)), 0, -1):
            if buf.endswith(self.marker[:k]):
                return k
        return 1 if buf.endswith("\r") else 0

    def do_execute(self, code, silent, store_history=True, user_expressions=None, allow_stdin=False, **kwargs):
        def emit(text):
            if text and not silent:
                self.send_response(self.iopub_socket, "stream", {"name": "stdout", "text": text.replace("\r\n", "\n")})

        with open(self.cell, "w") as f:
            f.write(code)
            if not code.endswith("\n"):
                f.write("\n")
        # Sourced, so that its variables, functions and cd stay; one prompt comes at its end, with
        # the status of the cell's last command (the prompt is set again each time: a cell may
        # change PS1).
        self.child.sendline(' . %s; PS1="%s:$?:"' % (self.cell, self.marker))
        buf = ""
        interrupted = False
        while True:
            try:
                data = self.child.read_nonblocking(1 << 16, timeout=0.2)
            except self.pexpect.TIMEOUT:
                data = None
            except self.pexpect.EOF:
                emit(buf)
                self.child.close()
                end_kernel(self.child.exitstatus)
            except KeyboardInterrupt:
                interrupted = True
                self.child.sendintr()
                continue
            if data:
                buf += data
            m = self.prompt.search(buf)
            if m:
                emit(buf[:m.start()])
                status = int(m.group(1))
                break
            # Whole lines go out as they come; a partial line once nothing more comes for a moment.
            cut = buf.rfind("\n") + 1 if data else len(buf) - self._held(buf)
            if cut > 0:
                emit(buf[:cut])
                buf = buf[cut:]
        if interrupted:
            return error_reply(self, silent, "Interrupted", "the cell was interrupted", ["Interrupted"])
        if status:
            return error_reply(self, silent, "ExitStatus", "the cell's last command exited with status %d" % status,
                               ["exit status %d" % status])
        return ok_reply(self)

    def do_shutdown(self, restart):
        try:
            self.child.close(force=True)
        except Exception:
            pass
        shutil.rmtree(self.dir, ignore_errors=True)
        return {"status": "ok", "restart": restart}


KERNELS = {"javascript": NodeKernel, "typescript": TypeScriptKernel, "bash": BashKernel}

if __name__ == "__main__":
    from ipykernel.kernelapp import IPKernelApp

    IPKernelApp.launch_instance(argv=sys.argv[2:], kernel_class=KERNELS[sys.argv[1]])
