"""SlurmCluster: a Cluster whose tasks wait for a Slurm allocation before they start.

Rules: until Slurm grants the allocation the tasks are "pending", and
`status()` carries the job id and squeue's reason in each task's last_error;
`wait_ready()` then waits for the allocation, places each task on the node
Slurm gave its rank, picks ports per node and starts the steps (the same
`start_tasks` as every launcher). `stop()` (or the owner's death, see
`slurm.py`) leaves no job in squeue.
"""
from __future__ import annotations

import time
from typing import Optional

from nbcluster.framework.cluster_spec import join_address
from nbcluster.launch import records
from nbcluster.launch.cluster import Cluster
from nbcluster.launch.errors import LaunchError
from nbcluster.launch.slurm import SlurmLauncher
from nbcluster.launch.startup import Task
from nbcluster.launch.status import TaskStatus


class SlurmCluster(Cluster):
    """The tasks of one cluster in one Slurm allocation (build it with `Cluster.slurm`)."""

    def __init__(self, tasks: list, launcher: SlurmLauncher, name: Optional[str],
                 config=None) -> None:
        super().__init__(tasks, launcher, name, config)
        self._allocated = False

    @classmethod
    def submit(cls, jobs: dict, launcher_options: dict, *, config=None, timeout: float = 60.0,
               wait: bool = True, name: Optional[str] = None,
               tls: Optional[bool] = None) -> "SlurmCluster":
        """Submits the allocation; with `wait`, also starts the tasks (see Cluster.slurm)."""
        tasks = [Task(job, i, "", 0) for job, n in jobs.items() for i in range(n)]
        for task in tasks:
            task.address = ""  # unknown until Slurm says which node
            task.state = "pending"
        launcher = SlurmLauncher(len(tasks), "", **launcher_options)
        cluster = cls(tasks, launcher, name, config)
        cluster._tls = tls
        launcher.cluster_name = cluster.name
        try:
            launcher.submit()
            if wait:
                cluster.wait_ready(timeout)
        except BaseException:
            cluster.stop()
            raise
        records.write(cluster)
        return cluster

    # -- Slurm's side ------------------------------------------------------------
    @property
    def job_id(self) -> Optional[str]:
        """The Slurm job id of the allocation."""
        return self._launcher.job_id

    def job_script(self) -> str:
        """The batch script submitted to hold the allocation."""
        return self._launcher.job_script()

    def job_state(self) -> tuple:
        """(state, reason) of the allocation, as squeue says ("PENDING", "Resources")."""
        return self._launcher.job_state()

    def _bring_up(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        self._launcher.wait_allocated(timeout)
        tasks = list(self._tasks.values())
        nodes = self._launcher.layout(max(1.0, deadline - time.monotonic()))
        for task, node in zip(tasks, nodes):
            task.host = node
            task.address = join_address(node, 0)
        self._allocated = True
        try:
            self._launch(max(1.0, deadline - time.monotonic()))
        except BaseException:
            self.stop()  # a task that cannot start will not start on a second try either
            raise
        records.write(self)

    # -- Cluster, with the pending phase ------------------------------------------
    def wait_ready(self, timeout: float = 30.0) -> None:
        """Waits for the allocation and starts the tasks, or waits for every task to answer.

        Raises:
          LaunchError: the allocation is still pending after `timeout` (squeue's
            reason quoted; it stays queued), Slurm can never grant it (it is
            cancelled), or a task did not start; or the cluster is stopped.
          TimeoutError: a started task did not answer GetStatus.
        """
        if self._stopped:
            raise LaunchError(f"Cluster {self.name!r} is stopped")
        if not self._allocated:
            self._bring_up(timeout)
            return
        super().wait_ready(timeout)

    def status(self, timeout: float = 2.0) -> list:
        """As Cluster.status; while the allocation is pending every task is "pending",
        with 'Slurm job J PENDING (reason: ...)' as its last_error."""
        if self._allocated or self._stopped:
            return super().status(timeout)
        why = self._launcher.describe(*self._launcher.job_state())
        return [TaskStatus(t.job, t.index, "pending", "", "", None, "", (), None,
                           last_error=why) for _, t in sorted(self._tasks.items())]

    def _owned(self, job: str, index: int, what: str) -> Task:
        task = super()._owned(job, index, what)
        if not self._allocated:
            raise LaunchError(f"Cluster {self.name!r} cannot {what} {task.name}: its Slurm "
                              f"job {self.job_id} has no allocation yet (wait_ready())")
        return task

    def _title(self) -> str:
        title = super()._title()
        if self._stopped or self.job_id is None:
            return title
        state = "RUNNING" if self._allocated else None
        reason = "None"
        if state is None:
            state, reason = self._launcher.job_state()
        return title[:-1] + f", {self._launcher.describe(state, reason)})"
