"""sbx's launcher of the Python kernel: ipykernel, as `python3 -m ipykernel_launcher` starts it, with
three per-cell costs taken off that only clients other than sbx's code bridge (code_bridge.py) need.

It runs INSIDE an environment, started by the bridge in place of `-m ipykernel_launcher` (same
interpreter, same arguments) as
    python3 .sbx-code-ipykernel_launcher.py -f CONNECTION_FILE [--Opt=value...]
Each change is made only where ipykernel has the shape it was written against (6.x: OutStream with one
buffer, a control thread); elsewhere that one is left out and ipykernel runs as it is. A later cell
`x+1` costs about 4 ms in the kernel as ipykernel ships, 2.3 ms with these (docs/code.md "Speed"):

- A flush of stdout or stderr with nothing written since the last one returns at once. ipykernel's
  flush waits for a round trip through its IOPub thread (two wake-ups of another thread) even when
  there is nothing to send, and a cell makes six of them (before its result, before its reply, after
  it): 1 ms of a later cell. A flush with output waiting, or a timed flush already due, still waits.
  What the IOPub thread is sending when the check is made has been queued before the check returns
  (the check waits for a running flush), so no output falls behind the idle status that ends a cell.
- A shell request does not first wait for a round trip through the control thread. ipykernel makes
  it so that control messages sent before a shell request are handled first; the bridge sends none
  (it interrupts with a signal and stops kernels by killing them): 0.4 ms.
- The dates in the headers of requests are read with datetime.fromisoformat (dateutil's parser, its
  fallback, cost 0.2 ms per request).
"""

import os
import sys
import threading


def fast_flush():
    from ipykernel.iostream import OutStream

    if not all(hasattr(OutStream, a) for a in ("flush", "_flush", "_flush_buffer", "_schedule_flush")):
        return
    flush, really_flush = OutStream.flush, OutStream._flush
    # Held by a flush that runs on the IOPub thread until its output is queued there; a child forked
    # meanwhile (multiprocessing) gets a free one, as its IOPub thread is not there to release it.
    running = [threading.Lock()]
    os.register_at_fork(after_in_child=lambda: running.__setitem__(0, threading.Lock()))

    def _flush(self):
        with running[0]:
            really_flush(self)

    def nothing_waits(self):
        buf = getattr(self, "_buffer", None)
        pending = getattr(self, "_flush_pending", None)
        if buf is None or pending is None or not hasattr(buf, "tell"):
            return False  # a shape not known: do as ipykernel does
        with running[0]:
            return not self._flush_pending and buf.tell() == 0

    def quick_flush(self):
        if not nothing_waits(self):
            flush(self)

    OutStream._flush = _flush
    OutStream.flush = quick_flush


def no_control_barrier():
    from ipykernel.kernelbase import Kernel

    if not hasattr(Kernel, "_flush_control_queue"):
        return

    async def _flush_control_queue(self):
        return None

    Kernel._flush_control_queue = _flush_control_queue


def fast_dates():
    import datetime

    import jupyter_client.jsonutil as ju

    slow = getattr(ju, "_dateutil_parse", None)
    if slow is None:
        return

    def parse(s):
        try:
            return datetime.datetime.fromisoformat(s)
        except ValueError:
            return slow(s)

    ju._dateutil_parse = parse


def main():
    # The path as `python3 -m` makes it: the working directory first, not the script's own (/tmp).
    sys.path[0] = os.getcwd()
    for change in (fast_flush, no_control_barrier, fast_dates):
        try:
            change()
        except Exception as e:  # the kernel starts as ipykernel ships it rather than not at all
            print("sbx python kernel: %s left out: %s" % (change.__name__, e), file=sys.stderr)
    from ipykernel import kernelapp

    kernelapp.launch_new_instance()


if __name__ == "__main__":
    main()
