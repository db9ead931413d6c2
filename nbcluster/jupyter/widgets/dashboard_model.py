"""The dashboard's state: one row of display strings per task, updated from each poll.

Rule: pure (no widgets, no sockets, no threads). `DashboardModel.update` takes
what a poll saw (TaskStatus rows, local exit codes, whether the cluster is
stopped) and says whether anything shown changed, so the widget sends a new
table only then.

State of a task: "stopped" once its cluster is stopped; else what its
Cluster reports, except that a "down" task whose process has meanwhile
exited with a nonzero code (a signal counts) is "failed" at once.
"""
from __future__ import annotations

import html
import signal
import threading
import time
from dataclasses import dataclass, replace
from typing import Optional

from nbcluster.jupyter.widgets.dashboard_usage import UsageHistory, format_cpu, sparkline_svg
from nbcluster.jupyter.widgets.units import format_bytes

RUNNING = ("up", "starting", "pending")  # states of a task that is (or will be) there
EVENTS = 8  # state changes kept under the table
STATE_COLORS = {"up": "#1a7f37", "starting": "#bf8700", "down": "#cf222e",
                "failed": "#cf222e", "stopped": "#57606a", "pending": "#bf8700"}
COLUMNS = ("task", "state", "address", "pid", "uptime", "CPU", "memory", "devices",
           "sessions", "steps", "sent", "received", "last error")


def format_devices(names: tuple, memory: tuple = (), gpu_memory: tuple = ()) -> str:
    """'CPU:0, GPU:0 (1.5 GiB of 80 GiB)' from full device names, their bytes and the
    GPUs' memory in use (TaskStatus.gpu_memory). A CPU device's limit is the host's
    memory, not the task's (that is the memory column), so only the other devices
    show theirs."""
    in_use = {entry[0]: entry[1] for entry in gpu_memory}
    parts = []
    for i, name in enumerate(names):
        short = name.rsplit("/device:", 1)[-1]
        limit = memory[i] if i < len(memory) else 0
        if name in in_use:
            parts.append(f"{short} ({format_bytes(in_use[name])} of {format_bytes(limit)})")
            continue
        shown = limit and not short.upper().startswith("CPU")
        parts.append(f"{short} ({format_bytes(limit)})" if shown else short)
    return ", ".join(parts)


def format_uptime(seconds: Optional[float]) -> str:
    """Coarse on purpose ('<1m', '12m', '3h05m', '2d04h'): the table changes at most
    once a minute while nothing else does, so idle polls send nothing."""
    if seconds is None:
        return ""
    minutes = int(seconds // 60)
    if minutes < 1:
        return "<1m"
    if minutes < 60:
        return f"{minutes}m"
    if minutes < 24 * 60:
        return f"{minutes // 60}h{minutes % 60:02d}m"
    return f"{minutes // 1440}d{minutes // 60 % 24:02d}h"


def exit_text(code: int) -> str:
    """'exited with status 1' or 'killed by SIGKILL' for a process exit code."""
    if code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exited with status {code}"


def derive_state(reported: str, exit_code: Optional[int], cluster_stopped: bool) -> str:
    """The dashboard's state of one task (see the module docstring)."""
    if cluster_stopped:
        return "stopped"
    if reported == "down" and exit_code not in (None, 0):
        return "failed"
    return reported


@dataclass(frozen=True)
class TaskRow:
    """One task as the dashboard shows it: every cell already a string."""
    job: str
    index: int
    state: str
    address: str
    pid: str
    uptime: str
    cpu: str
    memory: str
    devices: str
    sessions: str
    steps: str
    sent: str
    received: str
    error: str
    cpu_trend: tuple = ()  # samples of the last minutes, oldest first (sparklines)
    memory_trend: tuple = ()

    @property
    def name(self) -> str:
        return f"/job:{self.job}/task:{self.index}"

    def cells(self) -> tuple:
        """The row's strings in COLUMNS' order."""
        return (self.name, self.state, self.address, self.pid, self.uptime, self.cpu,
                self.memory, self.devices, self.sessions, self.steps, self.sent, self.received,
                self.error)


def row_of(status, exit_code: Optional[int] = None, cluster_stopped: bool = False,
           trends: tuple = ((), ())) -> TaskRow:
    """A TaskRow from a TaskStatus; counters are blank when the task did not answer;
    `trends` are its (cpu, memory) samples of the last minutes."""
    state = derive_state(status.state, exit_code, cluster_stopped)
    answered = status.uptime_s is not None
    error = status.last_error.splitlines()[0][:160] if status.last_error else ""
    if not error and state == "failed" and exit_code is not None:
        error = exit_text(exit_code)

    def counter(text: str) -> str:
        return text if answered else ""
    return TaskRow(
        status.job, status.index, state, status.address, str(status.pid or ""),
        format_uptime(status.uptime_s) if state == "up" else "",
        counter(format_cpu(status.cpu_percent)),
        counter(format_bytes(status.rss_bytes) if status.rss_bytes else ""),
        format_devices(status.devices, status.device_memory, status.gpu_memory),
        counter(str(status.active_sessions)), counter(str(status.steps_run)),
        counter(format_bytes(status.bytes_sent)), counter(format_bytes(status.bytes_received)),
        error, *(trends if answered else ((), ())))


class DashboardModel:
    """The rows of one dashboard; `update` replaces them and counts real changes.

    Args:
      title: the cluster's name, shown above the table.
    """

    def __init__(self, title: str) -> None:
        self.title = title
        self.rows: tuple = ()
        self.version = 0  # bumped by every update that changed what is shown
        self.stopped = False
        self.usage = UsageHistory()
        # (unix time, task name, old state, new state, why): what a glance at the table
        # misses, so a kill and its recovery stay visible after Run All
        self.events: tuple = ()
        self._lock = threading.Lock()  # the poller thread and the kernel both update

    def update(self, statuses: list, exit_codes: Optional[dict] = None,
               cluster_stopped: bool = False, now: Optional[float] = None) -> bool:
        """Takes one poll's TaskStatus rows; True if any shown cell changed.

        Args:
          exit_codes: {(job, index): exit code} of local processes that ended.
          cluster_stopped: the cluster was stopped: every task shows "stopped".
          now: the poll's time.monotonic() (for the sparklines' samples).
        """
        codes = exit_codes or {}
        now = time.monotonic() if now is None else now
        ordered = sorted(statuses, key=lambda s: (s.job, s.index))
        with self._lock:
            for s in ordered:
                if s.uptime_s is not None:  # it answered
                    self.usage.add((s.job, s.index), s.cpu_percent, s.rss_bytes, now)
            rows = tuple(row_of(s, codes.get((s.job, s.index)), cluster_stopped,
                                self.usage.trends((s.job, s.index))) for s in ordered)
            changed = rows != self.rows or cluster_stopped != self.stopped
            if changed:
                self._note_changes(rows)
                self.rows, self.stopped = rows, cluster_stopped
                self.version += 1
        return changed

    def _note_changes(self, rows: tuple) -> None:
        before = {(r.job, r.index): r.state for r in self.rows}
        stamp = time.time()
        new = tuple((stamp, r.name, before[r.job, r.index], r.state, r.error) for r in rows
                    if (r.job, r.index) in before and before[r.job, r.index] != r.state)
        self.events = (self.events + new)[-EVENTS:]

    def state(self, job: str, index: int) -> str:
        """The shown state of task /job:`job`/task:`index`.

        Raises:
          ValueError: the dashboard has no such task.
        """
        for row in self.rows:
            if (row.job, row.index) == (job, index):
                return row.state
        raise ValueError(f"the dashboard has no task /job:{job}/task:{index} (tasks: "
                         f"{', '.join(r.name for r in self.rows) or 'none'})")

    def heading(self, rows: Optional[tuple] = None) -> str:
        """'Cluster 'demo'', and, when no task of it runs, why: '(stopped)', or
        '(no task running: 1 failed, 1 stopped)' while the cluster itself was not stopped."""
        rows = self.rows if rows is None else rows
        title = f"Cluster {self.title!r}"
        if self.stopped:
            return f"{title} (stopped)"
        if rows and not any(row.state in RUNNING for row in rows):
            counts: dict = {}
            for row in rows:
                counts[row.state] = counts.get(row.state, 0) + 1
            return f"{title} (no task running: " + ", ".join(
                f"{n} {state}" for state, n in sorted(counts.items())) + ")"
        return title

    def html(self, note: str = "", rows: Optional[tuple] = None) -> str:
        """The table as HTML: each <tr> says its task and state (class nbc-state-<state>);
        `note` (escaped) is shown under the heading, as a snapshot's is."""
        rows = self.rows if rows is None else rows
        head = "".join(f"<th style='text-align:left;padding:2px 8px'>{html.escape(c)}</th>"
                       for c in COLUMNS)
        body = "".join(_html_row(row) for row in rows)
        note = f"<div class='nbc-snapshot-note'><i>{html.escape(note)}</i></div>" if note \
            else ""
        return (f"<div class='nbc-dashboard-table'><b>{html.escape(self.heading(rows))}</b>"
                f"{note}<table style='border-collapse:collapse;font-size:12px'><thead><tr>"
                f"{head}</tr></thead><tbody>{body}</tbody></table>{self._events_html()}</div>")

    def event_lines(self) -> list:
        """'16:40:01 UTC /job:worker/task:1: up → failed (killed by SIGKILL)', oldest first."""
        return [f"{time.strftime('%H:%M:%S UTC', time.gmtime(stamp))} {name}: {old} → {new}"
                + (f" ({why})" if why and new not in RUNNING else "")
                for stamp, name, old, new, why in self.events]

    def _events_html(self) -> str:
        if not self.events:
            return ""
        items = "".join(f"<li class='nbc-event nbc-event-{event[3]}'>{html.escape(line)}</li>"
                        for event, line in zip(self.events, self.event_lines()))
        return (f"<div class='nbc-dashboard-events' style='font-size:12px;margin-top:4px'>"
                f"<b>changes</b><ul style='margin:2px 0;padding-left:18px'>{items}</ul></div>")

    def snapshot_rows(self, tasks_ended: bool) -> tuple:
        """The rows for a static snapshot: as last seen, or, when the tasks ended with
        the kernel (it started them), every one "stopped" with no uptime."""
        if not tasks_ended:
            return self.rows
        return tuple(replace(row, state="stopped", uptime="") if row.state in RUNNING
                     else row for row in self.rows)

    def text(self, note: str = "", rows: Optional[tuple] = None) -> str:
        """The heading, then the table as aligned plain-text columns."""
        rows = self.rows if rows is None else rows
        table = [COLUMNS] + [row.cells() for row in rows]
        widths = [max(len(r[i]) for r in table) for i in range(len(COLUMNS))]
        lines = [self.heading(rows)] + ([f"  ({note})"] if note else [])
        for r in table:
            lines.append("  " + "  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip())
        if self.events:
            lines += ["  changes:"] + [f"    {line}" for line in self.event_lines()]
        return "\n".join(lines)


def _html_row(row: TaskRow) -> str:
    color = STATE_COLORS.get(row.state, "inherit")
    cells = []
    sparks = {"CPU": sparkline_svg(row.cpu_trend, 100.0), "memory": sparkline_svg(row.memory_trend)}
    for column, cell in zip(COLUMNS, row.cells()):
        text = html.escape(cell) + sparks.get(column, "")
        if column == "state":
            text = f"<span style='color:{color};font-weight:bold'>&#9679; {text}</span>"
        cells.append(f"<td class='nbc-{column.replace(' ', '-')}' "
                     f"style='text-align:left;padding:2px 8px'>{text}</td>")
    return (f'<tr class="nbc-task nbc-state-{row.state}" data-task="{html.escape(row.name)}" '
            f'style="border-left:4px solid {color}">{"".join(cells)}</tr>')
