"""Jupyter tier: failures fail. A magic's error raises (the cell is red) and shows one
plain line; an OpError in a cell shows the user's frames only, then the dead task and
the magic that restarts it."""
from __future__ import annotations

import os
import re
import signal

import pytest
from IPython.utils.capture import capture_output

import nbcluster
from nbcluster import errors
from nbcluster.jupyter.failures import TfServerError, dead_tasks, how_it_ended
from nbcluster.jupyter.tfserver_registry import Entry

from process_checks import wait_gone

pytestmark = pytest.mark.timeout(120)

STEP = """\
import nbcluster as tf
with tf.Graph().as_default():
    y = tf.constant(1.0) + 1.0
    # bounded: a client waits for a master that is not up (a minute by default)
    config = tf.ConfigProto(operation_timeout_in_ms=2000)
    with tf.Session(demo.target("worker", 1), config=config) as sess:
        sess.run(y)
"""


class _Exited:
    """A stand-in Cluster whose tasks ended with the given codes (None: running)."""

    def __init__(self, codes: dict, stopped: bool = False) -> None:
        self.targets = {key: f"grpc://127.0.0.1:{1000 + i}" for i, key in enumerate(codes)}
        self.codes, self.stopped = codes, stopped

    def exit_code(self, job, index):
        return self.codes[(job, index)]


def test_the_error_renders_as_its_message_and_hints():
    error = TfServerError("demo has no task nope:0", ("why", "fix"))
    assert str(error) == "demo has no task nope:0"
    assert error._render_traceback_() == ["tfserver: error: demo has no task nope:0", "why",
                                          "fix"]


@pytest.mark.parametrize("code, words", [(-signal.SIGKILL, "was killed by SIGKILL"),
                                         (-signal.SIGSEGV, "was killed by SIGSEGV"),
                                         (3, "exited with status 3"),
                                         (-200, "was killed by signal 200")])
def test_how_it_ended(code, words):
    assert how_it_ended(code) == words


def test_dead_tasks_name_the_task_the_cause_and_the_fix():
    entries = [Entry("demo", "local", _Exited({("ps", 0): None, ("worker", 0): 0,
                                               ("worker", 1): -9, ("worker", 2): 1})),
               Entry("old", "local", _Exited({("worker", 0): -9}, stopped=True)),
               Entry("ext", "connected", _Exited({("worker", 0): -9})),
               Entry("localhost:0", "server", object(), ("localhost", 0))]
    assert dead_tasks(entries) == [
        "worker/task:1 was killed by SIGKILL; `%tfserver restart demo worker:1`",
        "worker/task:2 exited with status 1; `%tfserver restart demo worker:2`"]


def test_a_failing_magic_cell_is_an_error_showing_one_line(ip):
    with capture_output() as cap:
        result = ip.run_cell("%%tfserver cluster demo\nps 1\nworker: 2\n")
    assert isinstance(result.error_in_exec, TfServerError)
    assert isinstance(result.error_in_exec.__cause__, ValueError)
    assert cap.stdout.strip() == ("tfserver: error: line 1: 'ps 1': expected 'job: count' "
                                  "or 'job: [addresses]', e.g. 'worker: 2'")
    assert not cap.stderr and "demo" not in ip.user_ns


def test_an_op_error_shows_user_frames_and_the_dead_task(ip):
    with capture_output():
        ip.run_cell("%%tfserver cluster demo\nworker: 2\n")
    demo = ip.user_ns["demo"]
    pid = demo.pid("worker", 1)
    demo.kill("worker", 1)
    assert wait_gone([pid]) == []
    with capture_output() as cap:
        result = ip.run_cell(STEP)
    assert isinstance(result.error_in_exec, errors.UnavailableError)
    shown = re.sub(r"\x1b\[[0-9;]*m", "", cap.stdout)  # IPython's colours
    lines = [line for line in shown.splitlines() if line.strip()]
    assert lines[-1] == ("worker/task:1 was killed by SIGKILL; "
                         "`%tfserver restart demo worker:1`")
    assert "UnavailableError" in lines[-2]
    assert "----> 7     sess.run(y)" in shown  # the user's own line
    package = os.path.dirname(nbcluster.__file__)
    assert package not in shown and "contextlib" not in shown and "File " not in shown
    assert result.error_in_exec.__traceback__ is not None  # the error itself is untouched

    # restarted: an error now names no dead task
    with capture_output():
        ip.run_line_magic("tfserver", "restart demo worker:1")
    with capture_output() as cap:
        result = ip.run_cell("import nbcluster as tf\nraise tf.errors.NotFoundError(None, None, "
                             "'no such thing')")
    assert isinstance(result.error_in_exec, errors.NotFoundError)
    assert cap.stdout.strip().splitlines()[-1].endswith("no such thing")


def test_unload_gives_back_the_exception_handler(ip):
    assert ip.custom_exceptions == (errors.OpError,)
    ip.run_line_magic("unload_ext", "nbcluster.jupyter")
    assert ip.custom_exceptions == ()


def test_a_handler_set_by_someone_else_is_kept(_shell):
    def theirs(shell, etype, value, tb, tb_offset=None):
        return ["theirs"]
    _shell.set_custom_exc((KeyError,), theirs)
    try:
        _shell.run_line_magic("load_ext", "nbcluster.jupyter")
        _shell.run_line_magic("unload_ext", "nbcluster.jupyter")
        assert _shell.custom_exceptions == (KeyError,)
    finally:
        _shell.set_custom_exc((), None)
