"""Progress: counters and text, when it shows (delay, throttle, mode), the kernel widget,
and the bars of cluster start-up and ClusterCoordinator.join on real task processes."""
from __future__ import annotations

import io
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

from nbcluster import progress as progress_module
from nbcluster.progress import Progress

pytestmark = pytest.mark.timeout(120)


class FakeTTY(io.StringIO):
    def isatty(self) -> bool:
        return True


def lines_of(tty: FakeTTY) -> list:
    """The states a terminal shows: each `\\r`-separated write, trailing pad stripped."""
    return [part.rstrip() for part in tty.getvalue().split("\r") if part.strip()]


def test_counts_postfix_and_text():
    bar = Progress(10, "training", "steps", mode="silent")
    bar.update()
    bar.update(3, loss=0.123456, lr=0.1)
    assert (bar.value, bar.total) == (4, 10)
    assert bar.text == "training 4/10 steps loss=0.1235 lr=0.1"
    bar.set(9, loss=2)  # ints stay ints; other keys are kept
    assert bar.text == "training 9/10 steps loss=2 lr=0.1"
    bar.total = 12
    assert bar.text.startswith("training 9/12 steps")
    assert Progress(3, mode="silent").text == "0/3"
    numpy_counts = Progress(np.int64(4), "n", mode="silent")
    numpy_counts.update(np.int32(2), loss=np.float32(0.25), step=np.int64(7))
    assert numpy_counts.text == "n 2/4 loss=0.25 step=7"
    assert not bar.shown


def test_auto_mode_is_silent_off_a_terminal_and_a_line_on_one():
    plain = io.StringIO()
    with Progress(2, "x", stream=plain) as bar:
        bar.update(2)
    assert bar.mode == "silent" and plain.getvalue() == ""

    tty = FakeTTY()
    with Progress(2, "copying", "files", stream=tty, min_interval=0) as bar:
        bar.update()
        bar.update(loss=0.5)
    assert bar.mode == "stream"
    assert lines_of(tty) == ["copying 1/2 files", "copying 2/2 files loss=0.5",
                             "copying 2/2 files loss=0.5"]
    assert tty.getvalue().endswith("\n") and tty.getvalue().count("\n") == 1


def test_nothing_shows_before_the_delay():
    tty = FakeTTY()
    with Progress(5, "fast", stream=tty, delay=30) as bar:
        for _ in range(5):
            bar.update()
    assert tty.getvalue() == "" and not bar.shown

    tty = FakeTTY()
    bar = Progress(5, "slow", stream=tty, delay=0.2, min_interval=0)
    bar.update()
    assert tty.getvalue() == ""
    time.sleep(0.25)
    bar.refresh()  # a wait with no new count still puts the bar up
    assert lines_of(tty) == ["slow 1/5"]
    bar.close()
    assert lines_of(tty)[-1] == "slow 1/5"


def test_refreshes_are_throttled_but_close_shows_the_last_count():
    tty = FakeTTY()
    with Progress(10_000, "many", stream=tty, min_interval=60) as bar:
        for _ in range(10_000):
            bar.update()
    assert lines_of(tty) == ["many 1/10000", "many 10000/10000"]


def test_close_is_idempotent_and_updates_after_close_show_nothing():
    tty = FakeTTY()
    bar = Progress(2, "x", stream=tty, min_interval=0)
    bar.update()
    bar.close()
    bar.close()
    written = tty.getvalue()
    bar.update()
    assert tty.getvalue() == written and bar.value == 2 and bar.closed


@pytest.mark.parametrize("args, kwargs, error, words", [
    (("3",), {}, TypeError, "'3'"),
    ((2.5,), {}, TypeError, "2.5"),
    ((True,), {}, TypeError, "True"),
    ((-1,), {}, ValueError, "-1"),
    ((3, 7), {}, TypeError, "description must be a str, not 7"),
    ((3,), {"unit": b"x"}, TypeError, "b'x'"),
    ((3,), {"delay": -1}, ValueError, "-1"),
    ((3,), {"min_interval": "1"}, ValueError, "'1'"),
    ((3,), {"mode": "tqdm"}, ValueError, "'tqdm'"),
])
def test_bad_arguments_are_named(args, kwargs, error, words):
    with pytest.raises(error, match=words.replace("(", r"\(")):
        Progress(*args, **kwargs)


def test_bad_counts_are_named():
    bar = Progress(3, mode="silent")
    with pytest.raises(TypeError, match="1.5"):
        bar.update(1.5)
    with pytest.raises(ValueError, match="-2"):
        bar.update(-2)
    with pytest.raises(ValueError, match="-1"):
        bar.set(-1)
    with pytest.raises(TypeError, match="'4'"):
        bar.total = "4"
    assert bar.value == 0


@pytest.fixture
def kernel_shell(tmp_path, monkeypatch):
    """IPython's shell, made to look like a kernel's (it has a `kernel`)."""
    monkeypatch.setenv("IPYTHONDIR", str(tmp_path / "ipython"))
    from IPython.core.interactiveshell import InteractiveShell
    shell = InteractiveShell.instance()
    monkeypatch.setattr(progress_module, "_kernel_shell", lambda: shell)
    return shell


def test_in_a_kernel_it_is_an_ipywidgets_bar_with_a_final_text_fallback(kernel_shell):
    from IPython.utils.capture import capture_output
    with capture_output() as captured:
        with Progress(4, "training", "steps", min_interval=0) as bar:
            assert bar.mode == "widget" and not bar.shown
            bar.update(loss=0.9)
            bar.update(2, loss=0.4)
            view = bar._view
            model_id = view.box.model_id
            assert (view._bar.value, view._bar.max) == (3, 4)
            assert view._bar.description == "training"
            assert view._label.value == "3/4 steps loss=0.4"
            bar.update(loss=0.25)
    first, last = captured.outputs[0].data, captured.outputs[-1].data
    model = first["application/vnd.jupyter.widget-view+json"]["model_id"]
    assert model == model_id
    assert first["text/plain"] == "training 1/4 steps loss=0.9"
    # closed, the display turns static: the notebook keeps the final bar and count, and
    # no widget view that a reopened notebook could not find
    assert last["text/plain"] == "training 4/4 steps loss=0.25"
    assert "application/vnd.jupyter.widget-view+json" not in last
    assert "width:100.0%" in last["text/html"] and "4/4 steps loss=0.25" in last["text/html"]
    assert captured.outputs[-1].metadata == {"nbcluster": {"widget": "Progress",
                                                           "snapshot": "closed"}}
    assert view._bar.value == 4 and view._bar.bar_style == "success"
    assert view.box.comm is None and view._bar.comm is None  # closed: no dead widget left


def test_a_failure_inside_the_block_turns_the_bar_red(kernel_shell):
    from IPython.utils.capture import capture_output
    with capture_output():
        with pytest.raises(KeyError):
            with Progress(4, "training", min_interval=0) as bar:
                bar.update()
                raise KeyError("boom")
    assert bar._view._bar.bar_style == "danger" and bar._view._bar.value == 1
    assert "width:25.0%" in bar._view._static_bundle(bar)["text/html"]


def test_in_a_kernel_a_background_thread_shows_nothing(kernel_shell):
    modes = []
    thread = threading.Thread(target=lambda: modes.append(Progress(3).mode))
    thread.start()
    thread.join()
    assert modes == ["silent"] and Progress(3).mode == "widget"


def test_hidden_silences_auto_bars_on_this_thread_only(kernel_shell):
    with progress_module.hidden():
        with progress_module.hidden():
            assert Progress(3).mode == "silent"
        assert Progress(3).mode == "silent"
        assert Progress(3, mode="widget").mode == "widget"  # an explicit mode still wins
    assert Progress(3).mode == "widget"


def test_import_nbcluster_does_not_load_ipywidgets_or_ipython():
    code = ("import sys, nbcluster, nbcluster.progress; "
            "print(sorted(m for m in ('ipywidgets', 'IPython') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == "[]"


# -- the bars the library itself shows ----------------------------------------------

def test_cluster_start_shows_tasks_coming_up(monkeypatch, cluster_factory):
    from nbcluster.launch import startup
    tty = FakeTTY()
    monkeypatch.setattr(sys, "stderr", tty)
    monkeypatch.setattr(startup, "_PROGRESS_DELAY_S", 0.0)
    cluster_factory({"worker": 2})
    shown = lines_of(tty)
    assert shown[0] == "starting cluster 0/2 tasks up", shown
    assert shown[-1] == "starting cluster 2/2 tasks up", shown


def test_a_quick_cluster_wait_shows_nothing(monkeypatch, cluster_factory):
    cluster = cluster_factory({"worker": 1})
    tty = FakeTTY()
    monkeypatch.setattr(sys, "stderr", tty)
    cluster.wait_ready(10)  # answers at once: under the half-second delay
    assert tty.getvalue() == ""


def test_coordinator_join_shows_functions_done(monkeypatch, cluster_factory):
    import nbcluster as tf
    from nbcluster.distribute import cluster_coordinator as coordinator_module
    from nbcluster.distribute.cluster_resolver import SimpleClusterResolver
    from nbcluster.distribute.experimental.coordinator import ClusterCoordinator
    cluster = cluster_factory({"ps": 1, "worker": 1})
    tty = FakeTTY()
    with tf.Graph().as_default():
        strategy = tf.distribute.experimental.ParameterServerStrategy(
            SimpleClusterResolver(cluster.spec, rpc_layer="grpc"))
        with strategy.scope():
            w = tf.Variable(np.eye(32, dtype=np.float32), name="w")

        @tf.function
        def step(x):
            return tf.reduce_sum(tf.matmul(tf.matmul(x, w), w))

        with ClusterCoordinator(strategy) as coordinator:
            coordinator.schedule(step, args=(np.ones((4, 32), np.float32),))
            coordinator.join()  # traces the function first, so the bar counts steps only
            monkeypatch.setattr(sys, "stderr", tty)
            monkeypatch.setattr(coordinator_module, "_PROGRESS_DELAY_S", 0.0)
            values = [coordinator.schedule(step, args=(np.ones((4, 32), np.float32),))
                      for _ in range(30)]
            coordinator.join()
    assert [float(v.fetch()) for v in values] == [128.0] * 30
    shown = lines_of(tty)
    assert shown[-1] == "scheduled functions 30/30 done", shown
    assert all(line.startswith("scheduled functions ") and line.endswith("/30 done")
               for line in shown), shown
