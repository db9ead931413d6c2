"""How nbcluster fails in a notebook: a red cell with a plain message, no internal frames,
and the known cause with its fix.

Rules: a failure raises (so the cell is red and Run All stops), never only
prints; what IPython shows is the user's own frames and the message, then,
where a task of a cluster this kernel started has died, which one, how, and
the magic that restarts it.
"""
from __future__ import annotations

import os
import signal
import sysconfig
import types
from typing import Optional

import IPython

import nbcluster
from nbcluster import errors

# frames from these directories are machinery (nbcluster, IPython, the standard library's
# context managers a `with` goes through), not the user's
_INTERNAL = tuple(os.path.dirname(m.__file__) + os.sep for m in (nbcluster, IPython)) + (
    os.path.join(sysconfig.get_paths()["stdlib"], ""),)


class TfServerError(Exception):
    """A %tfserver command failed on expected grounds (bad input, a task that would not
    start, a host that does not answer).

    IPython shows only `tfserver: error: MESSAGE` and the hint lines (the known
    cause and its fix), no traceback; the original exception is `__cause__`.
    """

    def __init__(self, message: str, hints: tuple = ()) -> None:
        super().__init__(message)
        self.message = message
        self.hints = tuple(hints)

    def _render_traceback_(self) -> list:
        return [f"tfserver: error: {self.message}", *self.hints]


def one_line(error: BaseException) -> str:
    """`error`'s message on one line: its first line, and its last when they differ
    (a launch failure's last line is the task's own error)."""
    text = error.message if isinstance(error, errors.OpError) else str(error)
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if not lines:
        return type(error).__name__
    return lines[0] if len(lines) == 1 else f"{lines[0]} ... {lines[-1]}"


def how_it_ended(code: int) -> str:
    """'was killed by SIGKILL' for -9, 'exited with status 3' for 3."""
    if code < 0:
        try:
            return f"was killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"was killed by signal {-code}"
    return f"exited with status {code}"


def dead_tasks(entries: list) -> list:
    """One line per task that ended on its own, of the started clusters in `entries`
    (registry entries): 'worker/task:1 was killed by SIGKILL; `%tfserver restart demo
    worker:1`'. A stopped cluster's tasks, and connected clusters (no process known),
    give none."""
    lines = []
    for entry in entries:
        if entry.kind in ("server", "connected") or entry.obj.stopped:
            continue
        for job, index in sorted(entry.obj.targets):
            code = entry.obj.exit_code(job, index)
            if code:  # 0: it stopped cleanly, not a failure's cause
                lines.append(f"{job}/task:{index} {how_it_ended(code)}; "
                             f"`%tfserver restart {entry.name} {job}:{index}`")
    return lines


def _user_traceback(tb: Optional[types.TracebackType]) -> Optional[types.TracebackType]:
    """`tb` without the frames of nbcluster and IPython (a new chain; `tb` is untouched)."""
    frames = []
    while tb is not None:
        if not tb.tb_frame.f_code.co_filename.startswith(_INTERNAL):
            frames.append(tb)
        tb = tb.tb_next
    out = None
    for kept in reversed(frames):
        out = types.TracebackType(out, kept.tb_frame, kept.tb_lasti, kept.tb_lineno)
    return out


def op_error_handler(entries):
    """An IPython custom exception handler for OpError: the user's frames only, the
    message, then the dead tasks of `entries()` (callable: the registry's entries now)."""

    def handler(shell, etype, value, tb, tb_offset=None) -> list:
        # the chained errors are the runtime's insides (gRPC, the executor): not shown
        cause, context = value.__cause__, value.__suppress_context__
        value.__cause__, value.__suppress_context__ = None, True
        try:
            stb = shell.InteractiveTB.structured_traceback(etype, value, _user_traceback(tb),
                                                           tb_offset=0)
        finally:
            value.__cause__, value.__suppress_context__ = cause, context
        stb = list(stb) + dead_tasks(entries())
        shell._showtraceback(etype, value, stb)
        return stb

    return handler
