"""The dashboard's pure state: task states, formatting, and re-rendering only on change."""
from __future__ import annotations

import dataclasses

import pytest

from nbcluster.jupyter.widgets.dashboard_model import (
    DashboardModel,
    derive_state,
    exit_text,
    format_devices,
    format_uptime,
)
from nbcluster.launch.status import TaskStatus

pytestmark = pytest.mark.timeout(30)

GIB = 1 << 30
CPU = "/job:worker/replica:0/task:0/device:CPU:0"
GPU = "/job:worker/replica:0/task:0/device:GPU:0"


def status(job="worker", index=0, state="up", pid=100, uptime=5.0, **counters) -> TaskStatus:
    """A TaskStatus as Cluster.status() gives it: answered ones carry devices and uptime."""
    answered = uptime is not None
    return TaskStatus(job, index, state, f"127.0.0.1:{5000 + index}",
                      f"grpc://127.0.0.1:{5000 + index}", pid, "host",
                      (CPU,) if answered else (), uptime,
                      device_memory=(24 * GIB,) if answered else (), **counters)


def test_devices_show_their_memory_but_the_host_memory_of_a_cpu_is_not_shown():
    # a CPU device's limit is the host's RAM: the task's own memory is its memory column
    assert format_devices((CPU, GPU), (24 * GIB, 80 * GIB)) == "CPU:0, GPU:0 (80 GiB)"
    assert format_devices((CPU,), (0,)) == "CPU:0"  # unknown memory: no "(0 B)"
    assert format_devices((CPU,)) == "CPU:0"


def test_a_gpu_shows_the_memory_its_task_uses_of_its_size():
    gpu_memory = ((GPU, 3 * GIB // 2, 2 * GIB, 10 * GIB, 80 * GIB),)
    assert format_devices((CPU, GPU), (24 * GIB, 80 * GIB), gpu_memory) == \
        "CPU:0, GPU:0 (1.5 GiB of 80 GiB)"


@pytest.mark.parametrize("seconds, text", [
    (None, ""), (0.0, "<1m"), (59.9, "<1m"), (60, "1m"), (3599, "59m"), (3600 + 5 * 60, "1h05m"),
    (2 * 86400 + 4 * 3600 + 59, "2d04h")])
def test_uptime_is_coarse(seconds, text):
    assert format_uptime(seconds) == text


def test_exit_text_names_the_signal():
    assert exit_text(-9) == "killed by SIGKILL"
    assert exit_text(3) == "exited with status 3"


@pytest.mark.parametrize("reported, code, stopped, state", [
    ("up", None, False, "up"), ("starting", None, False, "starting"),
    ("down", None, False, "down"), ("failed", 1, False, "failed"),
    ("down", -9, False, "failed"), ("down", 0, False, "down"), ("stopped", 0, False, "stopped"),
    ("up", None, True, "stopped"), ("failed", 1, True, "stopped")])
def test_derive_state(reported, code, stopped, state):
    assert derive_state(reported, code, stopped) == state


def test_a_task_goes_starting_up_down_and_up_again_with_its_new_pid():
    model = DashboardModel("c")
    seen = []
    for observed in [status(state="starting", uptime=None), status(uptime=1.0),
                     status(state="down", uptime=None), status(state="starting", uptime=None,
                                                               pid=200),
                     status(pid=200, uptime=0.5)]:
        assert model.update([observed]) is True
        row = model.rows[0]
        seen.append((row.state, row.pid))
    assert seen == [("starting", "100"), ("up", "100"), ("down", "100"), ("starting", "200"),
                    ("up", "200")]
    assert model.state("worker", 0) == "up" and model.version == 5


def test_a_process_that_exited_with_an_error_is_failed_and_says_how():
    model = DashboardModel("c")
    model.update([status(), status(index=1, state="failed", uptime=None)],
                 {("worker", 1): -9})
    assert [r.state for r in model.rows] == ["up", "failed"]
    assert model.rows[1].error == "killed by SIGKILL"
    model.update([status(), status(index=1, state="failed", uptime=None,
                                   last_error="InvalidArgumentError: bad\nmore")],
                 {("worker", 1): 2})
    assert model.rows[1].error == "InvalidArgumentError: bad"  # the task's own word first


def test_a_kill_and_its_recovery_stay_listed_under_the_table():
    model = DashboardModel("c")
    model.update([status(), status(index=1)])
    assert model.events == () and "changes" not in model.html()  # a first look is no change
    model.update([status(), status(index=1, state="failed", uptime=None)], {("worker", 1): -9})
    model.update([status(), status(index=1, uptime=0.5, steps_run=3)])
    model.update([status(steps_run=7), status(index=1, uptime=1.0, steps_run=3)])  # no change
    lines = model.event_lines()
    assert [line.split(" UTC ", 1)[1] for line in lines] == [
        "/job:worker/task:1: up → failed (killed by SIGKILL)",
        "/job:worker/task:1: failed → up"]
    assert "<li class='nbc-event nbc-event-failed'>" in model.html()
    assert model.text().endswith("  changes:\n    " + "\n    ".join(lines))
    for _ in range(20):  # only the last few are kept
        model.update([status(state="down", uptime=None)])
        model.update([status()])
    assert len(model.events) == 8


def test_a_silent_task_shows_no_counters():
    model = DashboardModel("c")
    model.update([status(state="down", uptime=None)])
    row = model.rows[0]
    assert (row.uptime, row.devices, row.steps, row.sent, row.sessions) == ("", "", "", "", "")


def test_counters_are_formatted():
    model = DashboardModel("c")
    model.update([status(steps_run=7, bytes_sent=1536, bytes_received=3 * GIB,
                         active_sessions=2)])
    row = model.rows[0]
    assert (row.steps, row.sent, row.received, row.sessions) == ("7", "1.5 KiB", "3 GiB", "2")
    assert row.devices == "CPU:0"


def test_cpu_and_memory_are_the_tasks_own_with_sparklines_of_the_last_minutes():
    model = DashboardModel("c")
    model.update([status(cpu_percent=12.4, rss_bytes=300 << 20)], now=100.0)
    row = model.rows[0]
    assert (row.cpu, row.memory) == ("12%", "300 MiB")
    assert row.cpu_trend == (12.4,) and "<svg" not in model.html()  # one sample: no line
    # polls between samples change nothing shown when the figures round the same
    assert model.update([status(cpu_percent=12.3, rss_bytes=300 << 20)], now=101.0) is False
    for i, cpu in enumerate([50.0, 150.0, 30.0]):
        model.update([status(cpu_percent=cpu, rss_bytes=(301 + i) << 20)], now=105.0 + 5 * i)
    row = model.rows[0]
    assert row.cpu_trend == (12.4, 50.0, 150.0, 30.0)
    assert row.memory_trend == tuple(n << 20 for n in (300, 301, 302, 303))
    assert (row.cpu, row.memory) == ("30%", "303 MiB")
    assert model.html().count("<svg class='nbc-spark'") == 2  # CPU and memory
    model.update([status(state="down", uptime=None)], now=200.0)  # silent: no figures
    row = model.rows[0]
    assert (row.cpu, row.memory, row.cpu_trend) == ("", "", ())


def test_only_a_change_in_what_is_shown_counts():
    model = DashboardModel("c")
    assert model.update([status(uptime=5.0)]) is True
    html_before = model.html()
    # the same poll again, and one whose uptime moved within the same minute
    assert model.update([status(uptime=5.0)]) is False
    assert model.update([status(uptime=40.0)]) is False
    assert model.version == 1 and model.html() == html_before
    assert model.update([status(uptime=40.0, steps_run=1)]) is True
    assert model.update([status(uptime=65.0, steps_run=1)]) is True  # "<1m" -> "1m"
    assert model.version == 3


def test_a_stopped_cluster_shows_every_task_stopped():
    model = DashboardModel("c")
    model.update([status(), status(index=1)])
    assert model.update([status(state="stopped", uptime=None),
                         status(index=1, state="stopped", uptime=None)], {}, True)
    assert [r.state for r in model.rows] == ["stopped", "stopped"]
    assert model.stopped and "(stopped)" in model.text().splitlines()[0]


def test_html_rows_carry_task_and_state_and_escape_text():
    model = DashboardModel("<c>")
    model.update([status(), status(index=1, state="down", uptime=None,
                                   last_error="<script>x</script>")])
    page = model.html()
    assert '<tr class="nbc-task nbc-state-up" data-task="/job:worker/task:0"' in page
    assert '<tr class="nbc-task nbc-state-down" data-task="/job:worker/task:1"' in page
    assert "<script>" not in page and "&lt;script&gt;" in page and "&#x27;&lt;c&gt;&#x27;" in page
    assert "#1a7f37" in page and "#cf222e" in page  # green up, red down


def test_text_table_is_aligned_columns():
    model = DashboardModel("c")
    model.update([status(steps_run=12), status(job="ps", state="starting", uptime=None)])
    lines = model.text().splitlines()
    assert lines[0] == "Cluster 'c'"
    assert lines[1].split()[:3] == ["task", "state", "address"]
    assert lines[2].split()[:2] == ["/job:ps/task:0", "starting"]  # sorted by job, index
    state_column = lines[1].index("state")
    assert all(line[state_column:].split()[0] in ("state", "starting", "up")
               for line in lines[1:])


def test_state_of_an_unknown_task_is_a_value_error():
    model = DashboardModel("c")
    model.update([status()])
    with pytest.raises(ValueError, match="/job:ps/task:3"):
        model.state("ps", 3)


def test_rows_are_values():
    model = DashboardModel("c")
    model.update([status()])
    with pytest.raises(dataclasses.FrozenInstanceError):
        model.rows[0].state = "down"
