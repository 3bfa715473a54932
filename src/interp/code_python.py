"""sbx's launcher of the Python kernel: ipykernel, as `python3 -m ipykernel_launcher` starts it, with
two per-cell costs taken off that only clients other than sbx's code bridge (code_bridge.py) need.

It runs INSIDE an environment, started by the bridge in place of `-m ipykernel_launcher` (same
interpreter, same arguments) as
    python3 .sbx-code-ipykernel_launcher.py -f CONNECTION_FILE [--Opt=value...]
Each change is made only where ipykernel has the shape it was written against (6.x: a control
thread); elsewhere that one is left out and ipykernel runs as it is (docs/code.md "Speed"). Flushes are
left as ipykernel makes them: a flush with nothing buffered that returned at once saved 1.1 ms a cell,
but let a child process's output (os.system) arrive after its cell had ended (1 cell in 25).

- A shell request does not first wait for a round trip through the control thread. ipykernel makes
  it so that control messages sent before a shell request are handled first; the bridge sends none
  (it interrupts with a signal and stops kernels by killing them): 0.4 ms.
- The dates in the headers of requests are read with datetime.fromisoformat (dateutil's parser, its
  fallback, cost 0.2 ms per request).
"""

import os
import sys


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
    for change in (no_control_barrier, fast_dates):
        try:
            change()
        except Exception as e:  # the kernel starts as ipykernel ships it rather than not at all
            print("sbx python kernel: %s left out: %s" % (change.__name__, e), file=sys.stderr)
    from ipykernel import kernelapp

    kernelapp.launch_new_instance()


if __name__ == "__main__":
    main()
