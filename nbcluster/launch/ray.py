"""The Ray launcher: one actor per task in one placement group, each running its task's server (extra `ray`).

Rules:
- The placement group holds every task's bundle, so the tasks are scheduled
  together; ports are picked per node (one call there, all bound together)
  once Ray says where each bundle is, and each task binds its node's address.
- An actor starts its server in `__init__`, and actors have `max_restarts`:
  when an actor's worker process dies, Ray runs `__init__` again and the
  task comes back at the same address. The server is the actor's child
  (`--exit-with-parent`), spawned by nbcluster's process-long spawner thread.
- The actors belong to this driver: they and their servers end with it;
  `close()` kills them (no restart) and removes the placement group.
- A task's token and TLS material travel as the actor's arguments (Ray's
  own channel), never on its server's command line: the actor hands the
  token over in the environment and writes the certificate and key as
  0600 files on its node (launch/task_secrets.py).
"""
from __future__ import annotations

import os
import subprocess
import sys
from typing import Optional

import ray
from ray.util.placement_group import placement_group, placement_group_table, remove_placement_group
from ray.util.scheduling_strategies import (
    NodeAffinitySchedulingStrategy,
    PlacementGroupSchedulingStrategy,
)

from nbcluster.launch import task_secrets
from nbcluster.launch.errors import LaunchError
from nbcluster.launch.launcher import EngineProcess
from nbcluster.launch.process import child_env, free_ports, spawn, wait_port_free
from nbcluster.launch.startup import Task, await_tasks

_CALL_S = 30.0  # seconds for one actor call


class TaskActor:
    """Runs one nbcluster task's server as this actor's child (started in __init__)."""

    def __init__(self, argv: list, env: dict, log_path: str, host: str, port: int) -> None:
        self.argv, self.env, self.log_path = argv, env, log_path
        self.host, self.port = host, port
        self.proc: Optional[subprocess.Popen] = None
        self.tls_folder: Optional[str] = None
        self.start()

    def start(self) -> int:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        wait_port_free(self.host, self.port, 15.0)  # a dead incarnation's server may linger
        os.makedirs(os.path.dirname(self.log_path), exist_ok=True)
        task_secrets.discard(self.tls_folder)
        env, self.tls_folder = task_secrets.materialize(self.env)
        with open(self.log_path, "ab") as log:
            self.proc = spawn(self.argv + [f"--exit-with-parent={os.getpid()}"],
                              env=child_env(env), stdin=subprocess.DEVNULL, stdout=log,
                              stderr=subprocess.STDOUT, start_new_session=True)
        return self.proc.pid

    def signal(self, sig: int) -> Optional[int]:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(sig)
        return self.exit_code()

    def exit_code(self) -> Optional[int]:
        return self.proc.poll() if self.proc is not None else 0


class RayProcess(EngineProcess):
    """One task's actor, as Cluster sees a task process."""

    def __init__(self, actor) -> None:
        super().__init__()
        self.actor = actor

    def _call(self, method, *args):
        """`actor.method(*args)`; None where the actor is dead or does not answer."""
        try:
            return ray.get(getattr(self.actor, method).remote(*args), timeout=_CALL_S)
        except (ray.exceptions.RayError, TimeoutError):
            return None

    def _exit_code(self) -> Optional[int]:
        return self._call("exit_code")

    def _send(self, sig: int) -> None:
        self._call("signal", sig)


class RayLauncher:
    """Starts a cluster's tasks as Ray actors of one placement group.

    Args:
      resources_per_task: each task's bundle, e.g. {"CPU": 2, "GPU": 1}
        (default {"CPU": 1}).
      python: the nodes' interpreter for the task servers (default: this one).
      env: environment variables for the task servers.
      max_restarts: how often Ray restarts a task's dead actor (-1: always).
    """

    kind = "ray"

    def __init__(self, resources_per_task: Optional[dict] = None, python: Optional[str] = None,
                 env: Optional[dict] = None, max_restarts: int = -1) -> None:
        resources = dict(resources_per_task or {"CPU": 1})
        if not all(isinstance(k, str) and isinstance(v, (int, float)) and v >= 0
                   for k, v in resources.items()):
            raise ValueError(f"resources_per_task must map resource names to amounts >= 0, "
                             f"not {resources_per_task!r}")
        self.resources = resources
        self.python = python or sys.executable
        self.env = {str(k): str(v) for k, v in (env or {}).items()}
        self.max_restarts = max_restarts
        self.group = None
        self._actors: dict = {}  # (job, index) -> actor handle
        self._bundles: dict = {}  # (job, index) -> bundle index

    def assign(self, jobs: dict, timeout: float) -> list:
        """Reserves a bundle per task, and a Task per bundle at a port free on its node.

        Raises:
          LaunchError: the placement group was not ready within `timeout`.
        """
        slots = [(job, i) for job, n in jobs.items() for i in range(n)]
        self.group = placement_group([self.resources] * len(slots), strategy="PACK")
        try:
            ray.get(self.group.ready(), timeout=timeout)
        except (ray.exceptions.GetTimeoutError, TimeoutError):
            raise LaunchError(f"Ray could not place {len(slots)} tasks of {self.resources} "
                              f"each within {timeout:g}s (cluster resources: "
                              f"{ray.cluster_resources()})") from None
        node_of = placement_group_table(self.group)["bundles_to_node_id"]
        addresses = {n["NodeID"]: n["NodeManagerAddress"] for n in ray.nodes() if n["Alive"]}
        per_node: dict = {}
        for bundle, node in node_of.items():
            per_node.setdefault(node, []).append(int(bundle))
        pick = ray.remote(num_cpus=0)(free_ports)
        ports = {node: ray.get(pick.options(scheduling_strategy=NodeAffinitySchedulingStrategy(
            node, soft=False)).remote(len(bundles), addresses[node]), timeout=timeout)
            for node, bundles in per_node.items()}
        tasks = []
        for bundle, (job, index) in enumerate(slots):
            node = node_of[bundle]
            tasks.append(Task(job, index, addresses[node], ports[node].pop()))
            self._bundles[(job, index)] = bundle
        return tasks

    def launch(self, tasks: list, status, logdir: str, config: Optional[str],
               timeout: float, token: Optional[str] = None, ca=None) -> None:
        """One actor per task (each starts its server), then waits for every task.

        Args:
          token, ca: the cluster's token and ClusterCA (None: no TLS).
        """
        import json
        spec: dict = {}
        for task in sorted(tasks, key=lambda t: (t.job, t.index)):
            spec.setdefault(task.job, []).append(task.address)
        actor_class = ray.remote(TaskActor)
        cpus = self.resources.get("CPU", 0)
        gpus = self.resources.get("GPU", 0)
        custom = {k: v for k, v in self.resources.items() if k not in ("CPU", "GPU")}
        for task in tasks:
            task.log_path = os.path.join(logdir, f"{task.job}-{task.index}.log")
            argv = [self.python, "-m", "nbcluster.server", "--cluster", json.dumps(spec),
                    "--job", task.job, "--task", str(task.index)] + \
                (["--config", config] if config else [])
            strategy = PlacementGroupSchedulingStrategy(
                placement_group=self.group,
                placement_group_bundle_index=self._bundles[(task.job, task.index)])
            actor = actor_class.options(num_cpus=cpus, num_gpus=gpus, resources=custom,
                                        max_restarts=self.max_restarts,
                                        scheduling_strategy=strategy).remote(
                argv, {**self.env, **task_secrets.task_env(task, token, ca, None)},
                task.log_path, task.host, task.requested_port)
            self._actors[(task.job, task.index)] = actor
            task.process = RayProcess(actor)
        await_tasks(tasks, status, timeout, raise_on_bind=True)

    # -- the Launcher protocol (for Cluster.restart) ----------------------------------
    def free_ports(self, host: str, count: int, timeout: float) -> list:
        raise LaunchError("a Ray cluster's ports are picked when it starts")

    def start(self, host: str, args: list, log_path: str, tasks_on_host: int,
              env: dict) -> RayProcess:
        """Restarts the task of `args` (its --job and --task) in its actor."""
        key = (args[args.index("--job") + 1], int(args[args.index("--task") + 1]))
        process = RayProcess(self._actors[key])
        if process._call("start") is None:
            raise LaunchError(f"The Ray actor of /job:{key[0]}/task:{key[1]} does not answer")
        return process

    def close(self) -> None:
        """Kills every actor (their servers die with them) and frees the placement group."""
        actors, self._actors = list(self._actors.values()), {}
        for actor in actors:
            try:
                ray.kill(actor, no_restart=True)
            except (ray.exceptions.RayError, ValueError):
                pass
        if self.group is not None:
            try:
                remove_placement_group(self.group)
            except (ray.exceptions.RayError, ValueError):
                pass
            self.group = None
