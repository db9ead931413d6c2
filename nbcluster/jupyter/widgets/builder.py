"""ClusterBuilder: design a cluster in a widget, launch it, watch and control it.

The design lives in a `builder_model.Design`; the controls (builder_controls)
only edit it, and every edit re-renders the equivalent `%%tfserver cluster`
cell and Python code (builder_text), so what the user copies starts the
same cluster.
Launch goes through `nbcluster.launch.Cluster`, which stops every process
it started if the start fails, and ends them all at kernel exit.
"""
from __future__ import annotations

import contextlib
import html
from typing import Optional

import ipywidgets as widgets

from nbcluster import errors, progress
from nbcluster.jupyter.widgets import builder_model as model
from nbcluster.jupyter.widgets import builder_text, snapshot
from nbcluster.jupyter.widgets.builder_controls import (
    ActionBar,
    GeneratedTabs,
    LauncherForm,
    close_all,
    job_panel,
    start_progress,
    ticking,
)
from nbcluster.launch import Cluster, LaunchError

ROOT_CLASS = "nbcluster-builder"
EXPECTED_ERRORS = (ValueError, TypeError, TimeoutError, OSError, LaunchError, errors.OpError)


def _message(error: BaseException) -> str:
    return error.message if isinstance(error, errors.OpError) else str(error)


class ClusterBuilder(snapshot.Snapshotted, widgets.VBox):
    """Jobs, tasks, hosts and devices to edit; Launch, Stop and Restart-task buttons;
    the live status of what was launched; the equivalent cell and Python code.

    Args:
      name: the variable name the generated cell and code bind the cluster to.
      timeout: seconds for every task to answer at launch.
    Example:
      >>> builder = ClusterBuilder()                # doctest: +SKIP
      >>> builder.add_job("chief", tasks=1, cpus=2)
      >>> cluster = builder.launch()
      >>> builder.stop()
    """

    _cluster: Optional[Cluster] = None  # also for close() on a half-built builder

    def __init__(self, name: str = "cluster", timeout: float = 60.0) -> None:
        if not isinstance(name, str) or not name.isidentifier():
            raise ValueError(f"name must be a Python identifier, not {name!r}")
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or \
                not timeout > 0:
            raise ValueError(f"timeout must be a positive number of seconds, not {timeout!r}")
        self.name = name
        self._design = model.default_design()
        self._design.timeout = float(timeout)
        self._status: Optional[widgets.Widget] = None
        self._jobs = widgets.VBox()
        self._panels: dict = {}  # id(JobDesign) -> (its task count, its panel)
        self._message = widgets.HTML()
        self._progress = start_progress(timeout)
        self._status_box = widgets.VBox()
        self._tabs = GeneratedTabs()
        self._form = LauncherForm(self._design.ssh, lambda: self._guarded(self._add_default_job),
                                  self._edit_launcher)
        self._actions = ActionBar(lambda: self._guarded(self.launch),
                                  lambda: self._guarded(self.stop),
                                  lambda task: self._guarded(lambda: self.restart(*task)))
        # The controls' own names, which tests (and readers of a builder) look for.
        self._ssh_box, self._task_choice = self._form.ssh_box, self._actions.task
        self._launch_button, self._stop_button = self._actions.launch, self._actions.stop
        self._restart_button = self._actions.restart
        super().__init__(children=[widgets.HTML("<b>Cluster builder</b>"), self._jobs,
                                   self._form, self._actions, self._progress, self._message,
                                   self._status_box, self._tabs])
        self.add_class(ROOT_CLASS)
        self._render_jobs()

    # -- design edits ----------------------------------------------------------
    def _edit(self, change, render: bool = False) -> None:
        try:
            change()
        except EXPECTED_ERRORS as e:  # the design keeps its last good value; say why
            self._refresh(e)
            return
        if render:
            self._render_jobs()
        else:
            self._refresh()

    def _edit_launcher(self) -> None:
        try:
            self._form.apply(self._design)
        except ValueError as e:
            self._refresh(e)
        else:
            self._refresh()

    def _render_jobs(self) -> None:
        # A job whose task count is unchanged keeps its panel: the page builds a box's
        # children asynchronously, and a box replaced meanwhile failed there
        # ("Cannot read properties of null (reading 'widgets')" in ipywidgets' Box view).
        old, self._panels = self._panels, {}
        for job in self._design.jobs:
            kept = old.get(id(job))
            if kept is not None and kept[0] == job.tasks:
                del old[id(job)]
            else:
                kept = (job.tasks, job_panel(job, self._edit, self._remove_clicked))
            self._panels[id(job)] = kept
        self._jobs.children = [self._panels[id(job)][1] for job in self._design.jobs]
        for _, panel in old.values():  # removed jobs', and resized jobs' old panels
            close_all(panel)
        self._refresh()

    def _refresh(self, error: Optional[Exception] = None) -> None:
        """Re-renders the cell and code, or shows in red why the design is wrong."""
        try:
            if error is not None:
                raise error
            self._generated = (builder_text.cell_text(self._design, self.name),
                               builder_text.python_code(self._design, self.name))
        except EXPECTED_ERRORS as e:
            self._generated = (f"# not valid yet: {_message(e)}\n",) * 2
            self._show_error(e)
            self._actions.show_invalid(_message(e))
        else:
            if self._message.value.startswith("<span class=\"nbcluster-builder-error\""):
                self._message.value = ""
            self._actions.show_invalid(None)
        self._tabs.show(*self._generated)

    def _remove_clicked(self, name: str) -> None:
        self._guarded(lambda: self.remove_job(name))

    def _add_default_job(self) -> None:
        self.add_job(model.next_job_name(self._design))

    def add_job(self, name: str, tasks: int = 1, hosts=None, cpus=None, gpus="") -> None:
        """Adds job `name` to the design.

        Args:
          tasks: its number of tasks.
          hosts: "local", a host name or "host:port" (SSH hosts need the SSH
            launcher), for every task, or a list with one per task.
          cpus: CPU devices per task (None: the default, 1), or a list.
          gpus: per task CUDA_VISIBLE_DEVICES: "0,1"; "none": no GPU; "": not set.
        Raises:
          ValueError, TypeError: naming the bad value (also shown in red); the
            design is left as it was.
        """
        try:
            job = model.job_to_add(self._design, name, tasks, hosts, cpus, gpus)
        except EXPECTED_ERRORS as e:
            self._show_error(e)
            raise
        self._design.jobs.append(job)
        self._render_jobs()

    def remove_job(self, name: str) -> None:
        """Removes job `name` from the design (ValueError if there is none)."""
        self._design.jobs.remove(self._design.job(name))
        self._render_jobs()

    def set_launcher(self, launcher: str, *, user: str = "", key: str = "", port: int = 22,
                     python: str = "python3", options=(), env: Optional[dict] = None) -> None:
        """Picks "local" processes or "ssh" (with the options `%%tfserver cluster --ssh` takes).

        Args:
          options: `ssh -o` options, e.g. ["StrictHostKeyChecking=accept-new"].
          env: environment variables for every task (`--env`), e.g. {"PYTHONPATH": ...}.
        Raises:
          ValueError: an unknown launcher.
        """
        if launcher not in model.LAUNCHERS:
            raise ValueError(f"bad launcher {launcher!r}: use 'local' or 'ssh'")
        self._form.fill(launcher, user, key, port, python, options, env or {})
        self._edit_launcher()

    # -- state -----------------------------------------------------------------
    @property
    def design(self) -> model.Design:
        """The design the controls edit (builder_model.Design)."""
        return self._design

    @property
    def spec(self) -> dict:
        """The designed ClusterSpec dict ({job: ["host:port", ...]}; port 0 = picked)."""
        return model.cluster_spec(self._design)

    @property
    def cluster(self) -> Optional[Cluster]:
        """The launched Cluster; None before Launch and after Stop."""
        return self._cluster

    @property
    def cell(self) -> str:
        """The equivalent `%%tfserver cluster` cell (a "# not valid yet" line if none)."""
        return self._generated[0]

    @property
    def code(self) -> str:
        """The equivalent Python code (a "# not valid yet" line if none)."""
        return self._generated[1]

    # -- actions ---------------------------------------------------------------
    def launch(self) -> Cluster:
        """Starts the design (what the Launch button does) and shows its live status.

        Returns:
          The started Cluster (also `.cluster`).
        Raises:
          ValueError, TypeError: a bad design, naming the value.
          LaunchError: a task did not start; nothing it started is left running.
        """
        try:
            if self._cluster is not None:
                raise LaunchError(f"{self._cluster.name!r} is running: Stop it before "
                                  f"launching again")
            method, args, kwargs = model.cluster_call(self._design)
            with self._busy(f"starting {sum(j.tasks for j in self._design.jobs)} tasks"):
                cluster = getattr(Cluster, method)(*args, name=self.name, **kwargs)
        except EXPECTED_ERRORS as e:
            self._show_error(e)
            raise
        self._cluster = cluster
        self._show_info(f"launched {cluster.name!r}: {len(cluster.targets)} tasks")
        self._show_status(cluster)
        return cluster

    def stop(self) -> None:
        """Stops the launched cluster and every process of it (nothing if none)."""
        cluster, self._cluster = self._cluster, None
        if cluster is None:
            return
        self._show_status(None)
        cluster.stop()
        self._show_info(f"stopped {cluster.name!r}")

    def restart(self, job: str, index: int) -> str:
        """Restarts task /job:`job`/task:`index` of the launched cluster; its target.

        Raises:
          LaunchError: nothing launched, or the task did not come back.
          ValueError: no such task.
        """
        if self._cluster is None:
            raise LaunchError("nothing is launched: Launch first")
        try:
            with self._busy(f"restarting {job}:{index}"):
                target = self._cluster.restart(job, index)
        except EXPECTED_ERRORS as e:
            self._show_error(e)
            raise
        self._show_info(f"{job}:{index} restarted at {target}")
        return target

    def close(self) -> None:
        """Stops the launched cluster, then closes every control of the builder."""
        self.stop()
        for child in self.children:
            close_all(child)
        super().close()

    # -- display helpers ---------------------------------------------------------
    def _guarded(self, action) -> None:
        """Runs a button's or field's action; an expected error is shown, not raised."""
        try:
            action()
        except EXPECTED_ERRORS as e:
            self._show_error(e)

    def _show_error(self, error: BaseException) -> None:
        self._message.value = (f"<span class=\"nbcluster-builder-error\" style=\"color:"
                               f"#c62828\">{html.escape(_message(error))}</span>")

    def _show_info(self, text: str) -> None:
        self._message.value = f"<span>{html.escape(text)}</span>"

    def _show_status(self, cluster: Optional[Cluster]) -> None:
        old, self._status = self._status, None
        if cluster is not None:
            from nbcluster.jupyter.widgets.dashboard import ClusterDashboard
            self._status = ClusterDashboard(cluster)
        self._status_box.children = [self._status] if self._status is not None else []
        if old is not None:
            old.close()
        self._actions.show_running(cluster.targets if cluster is not None else None)

    @contextlib.contextmanager
    def _busy(self, what: str):
        """While a start or restart runs: every button off, and the progress bar filling
        with the seconds spent (out of the timeout)."""
        with self._actions.busy(), ticking(self._progress, self._design.timeout), \
                progress.hidden():  # the builder's own bar, not a second one in the cell
            self._show_info(f"{what}…")
            yield

    # -- fallbacks -------------------------------------------------------------
    def _repr_mimebundle_(self, **kwargs) -> dict:
        data = super()._repr_mimebundle_(**kwargs) or {}
        data["text/plain"] = self._text()
        data["text/html"] = self._html()
        return data

    def _state(self) -> str:
        return f"running as {self._cluster.name!r}" if self._cluster else "not launched"

    def _text(self) -> str:
        return builder_text.design_text(self._design, self._state(), self.cell)

    def _html(self) -> str:
        return builder_text.design_html(self._design, self._state(), self.cell, ROOT_CLASS)
