"""The cluster builder's controls: job panels, launcher form, action bar, generated text.

Rule: a control only shows and reads its fields. What an edit does to the
design and what a button starts are callbacks that `ClusterBuilder` gives,
so every error is shown (or raised) in one place, the builder.
"""
from __future__ import annotations

import contextlib
import threading
import time
from typing import Callable, Iterable, Optional

import ipywidgets as widgets

from nbcluster.jupyter.widgets import builder_model as model

_TICK_S = 0.25


def close_all(widget: widgets.Widget) -> None:
    """Closes `widget` and, first, every widget inside it."""
    for child in getattr(widget, "children", ()):
        close_all(child)
    widget.close()


def job_panel(job: model.JobDesign, edit: Callable[..., None],
              remove: Callable[[str], None]) -> widgets.VBox:
    """The fields of one job: name and task count, and each task's host, CPUs and GPUs.

    Args:
      job: the JobDesign the fields write to.
      edit: `edit(change, render=False)`, called with a function that applies
        one field's new value to `job`; render=True when the task count
        changed, so the panels must be built again.
      remove: called with the job's name (as it is then) by its remove button.
    Returns:
      A VBox: one row for the job, one indented row per task.
    """
    name = widgets.Text(job.name, description="job")
    # min 1: a job of no task is removed with its button, never left empty
    tasks = widgets.BoundedIntText(job.tasks, min=1, max=256, description="tasks")
    remove_button = widgets.Button(description="remove", icon="trash")
    name.observe(lambda c: edit(lambda: setattr(job, "name", c["new"].strip())), "value")
    tasks.observe(lambda c: edit(lambda: job.resize(c["new"]), render=True), "value")
    remove_button.on_click(lambda _: remove(job.name))
    rows = [widgets.HBox([name, tasks, remove_button])]
    for index in range(job.tasks):
        host = widgets.Text(job.hosts[index], description=f"task {index} host",
                            placeholder="local, host or host:port")
        # per task, as the cell's `cpus: [1, 2]` is: one field for the job showed
        # only the first task's count
        cpus = widgets.Text("" if job.cpus[index] is None else str(job.cpus[index]),
                            description="CPUs", placeholder="1 (default)",
                            layout=widgets.Layout(width="14em"))
        gpus = widgets.Text(job.gpus[index], description="GPUs",
                            placeholder="all (empty), none, or 0,1")
        host.observe(lambda c, i=index: edit(lambda: job.hosts.__setitem__(i, c["new"])),
                     "value")
        cpus.observe(lambda c, i=index: edit(lambda: job.cpus.__setitem__(
            i, model.parse_cpus(job.name, i, c["new"]))), "value")
        gpus.observe(lambda c, i=index: edit(
            lambda: job.gpus.__setitem__(i, c["new"].strip())), "value")
        rows.append(widgets.HBox([host, cpus, gpus],
                                 layout=widgets.Layout(margin="0 0 0 2em")))
    return widgets.VBox(rows, layout=widgets.Layout(border="1px solid #ddd",
                                                    margin="2px 0", padding="2px"))


class LauncherForm(widgets.VBox):
    """The "Add job" button, the local/SSH choice, the SSH options (shown for SSH
    only) and the environment variables of every task.

    Args:
      ssh: the SSHOptions the fields start from.
      add: called by "Add job".
      changed: called after any field changed (the builder then calls `apply`).
    """

    def __init__(self, ssh: model.SSHOptions, add: Callable[[], None],
                 changed: Callable[[], None]) -> None:
        add_button = widgets.Button(description="Add job", icon="plus")
        add_button.on_click(lambda _: add())
        # buttons as wide as their labels, and the toggle never shrunk by the row: at
        # the default widths (a fixed width per button) "SSH" wrapped below "local"
        self.launcher = widgets.ToggleButtons(options=[("local processes", "local"),
                                                       ("SSH", "ssh")], value="local",
                                              style={"button_width": "auto"},
                                              layout=widgets.Layout(width="auto",
                                                                    flex="0 0 auto"))
        self.ssh = {"user": widgets.Text(ssh.user, description="user"),
                    "key": widgets.Text(ssh.key, description="key file"),
                    "port": widgets.IntText(ssh.port, description="ssh port"),
                    "python": widgets.Text(ssh.python, description="python"),
                    "options": widgets.Text(", ".join(ssh.options), description="ssh -o",
                                            placeholder="StrictHostKeyChecking=accept-new")}
        self.ssh_box = widgets.HBox(list(self.ssh.values()),
                                    layout=widgets.Layout(display="none"))
        self.env = widgets.Text(description="env", placeholder="PYTHONPATH=/opt/code, ...",
                                layout=widgets.Layout(width="auto", flex="1 1 20em"))
        for control in [self.launcher, *self.ssh.values(), self.env]:
            control.observe(lambda _: changed(), "value")
        super().__init__([widgets.HBox([add_button, self.launcher, self.env],
                                       layout=widgets.Layout(flex_flow="row nowrap")),
                          self.ssh_box])

    def fill(self, launcher: str, user: str, key: str, port: int, python: str,
             options: Iterable[str], env: dict) -> None:
        """Sets every field (each change calls `changed`), the launcher last."""
        for name, value in (("user", user), ("key", key), ("port", port), ("python", python),
                            ("options", ", ".join(options))):
            self.ssh[name].value = value
        self.env.value = ", ".join(f"{k}={v}" for k, v in env.items())
        self.launcher.value = launcher

    def apply(self, design: model.Design) -> None:
        """Writes the fields into `design` and shows the SSH options for SSH only.

        Raises:
          ValueError: the env field is not NAME=VALUE, ... (the rest is written).
        """
        ssh = design.ssh
        ssh.user, ssh.key = self.ssh["user"].value.strip(), self.ssh["key"].value.strip()
        ssh.port, ssh.python = self.ssh["port"].value, self.ssh["python"].value.strip()
        ssh.options = [o.strip() for o in self.ssh["options"].value.split(",") if o.strip()]
        design.launcher = self.launcher.value
        self.ssh_box.layout.display = "flex" if self.launcher.value == "ssh" else "none"
        design.env = model.parse_env(self.env.value)


class ActionBar(widgets.HBox):
    """Launch, Stop, a task choice and Restart task; all but Launch off until launched.

    Args:
      launch, stop: called by their buttons.
      restart: called with the chosen task's (job, index), or None if none is.
    """

    def __init__(self, launch: Callable[[], None], stop: Callable[[], None],
                 restart: Callable[[Optional[tuple]], None]) -> None:
        self.launch = widgets.Button(description="Launch", button_style="success",
                                     icon="play")
        self.stop = widgets.Button(description="Stop", button_style="danger", icon="stop",
                                   disabled=True)
        self.task = widgets.Dropdown(options=[], description="task", disabled=True)
        self.restart = widgets.Button(description="Restart task", icon="refresh",
                                      disabled=True)
        self._invalid: Optional[str] = None
        self.launch.on_click(lambda _: launch())
        self.stop.on_click(lambda _: stop())
        self.restart.on_click(lambda _: restart(self.task.value))
        super().__init__([self.launch, self.stop, self.task, self.restart])

    def show_invalid(self, reason: Optional[str]) -> None:
        """Launch off, its tooltip saying `reason`, while the design is invalid (None:
        valid, Launch on unless a cluster runs)."""
        self._invalid = reason
        self.launch.tooltip = f"not valid yet: {reason}" if reason else "start the cluster"
        if not self.stop.disabled:  # running: Launch stays off anyway
            return
        self.launch.disabled = reason is not None

    def show_running(self, tasks: Optional[Iterable[tuple]]) -> None:
        """Enables the controls for a launched cluster of `tasks` ((job, index) pairs),
        or, with None, only Launch (if the design is valid)."""
        running = tasks is not None
        self.launch.disabled = running or self._invalid is not None
        self.stop.disabled = self.restart.disabled = self.task.disabled = not running
        self.task.options = [(f"{j}:{i}", (j, i)) for j, i in sorted(tasks)] if running else []
        self.task.value = self.task.options[0][1] if self.task.options else None

    @contextlib.contextmanager
    def busy(self):
        """Every button disabled while the block runs, then as it was."""
        buttons = [self.launch, self.stop, self.restart]
        was = [button.disabled for button in buttons]
        for button in buttons:
            button.disabled = True
        try:
            yield
        finally:
            for button, disabled in zip(buttons, was):
                button.disabled = disabled


class GeneratedTabs(widgets.Tab):
    """The equivalent cell and Python code, each in a text area that can be selected
    and copied but not edited: a typed change is put back at once."""

    def __init__(self) -> None:
        self.cell = widgets.Textarea(layout=widgets.Layout(width="100%", height="9em"))
        self.code = widgets.Textarea(layout=widgets.Layout(width="100%", height="6em"))
        self._shown = ("", "")
        for index, area in enumerate((self.cell, self.code)):
            area.observe(lambda _, a=area, i=index: self._keep(a, i), "value")
        super().__init__([self.cell, self.code])
        self.set_title(0, "%%tfserver cell")
        self.set_title(1, "Python")

    def show(self, cell: str, code: str) -> None:
        """Shows (and from now on keeps) `cell` and `code`."""
        self._shown = (cell, code)
        self.cell.value, self.code.value = cell, code

    def _keep(self, area: widgets.Textarea, index: int) -> None:
        if area.value != self._shown[index]:
            area.value = self._shown[index]


def start_progress(timeout: float) -> widgets.FloatProgress:
    """The hidden bar that `ticking` shows while tasks start."""
    return widgets.FloatProgress(min=0.0, max=float(timeout), bar_style="info",
                                 description="starting", layout=widgets.Layout(display="none"))


@contextlib.contextmanager
def ticking(bar: widgets.FloatProgress, seconds: float):
    """Shows `bar` filling with the seconds spent (out of `seconds`) while the block
    runs; a ticker thread moves it, since the block blocks the kernel's thread."""
    done, started = threading.Event(), time.monotonic()
    bar.max, bar.value, bar.layout.display = seconds, 0.0, "flex"

    def tick() -> None:
        while not done.wait(_TICK_S):
            bar.value = min(bar.max, time.monotonic() - started)
            bar.description = f"{bar.value:.0f} s"
    threading.Thread(target=tick, name="nbcluster-builder-progress", daemon=True).start()
    try:
        yield
    finally:
        done.set()
        bar.layout.display = "none"
