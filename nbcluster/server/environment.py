"""A task's cluster from its environment: TF_CONFIG (Kubeflow, Vertex) or Slurm's variables.

Pure functions of an environment mapping: no I/O, nothing set. The server's
`--from-env` and the cluster resolvers of `nbcluster.launch.resolvers` both
read the environment through this module, so the two agree.
"""
from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import NamedTuple, Optional

DEFAULT_SLURM_PORT_BASE = 8888
_COUNT_RE = re.compile(r"(\d+)(?:\(x(\d+)\))?")
_RANGE_RE = re.compile(r"(\d+)(?:-(\d+))?")


class EnvironmentTask(NamedTuple):
    """One task as an environment describes it."""
    cluster: dict          # job -> list of "host:port"
    job: Optional[str]     # None where the environment names no task
    index: Optional[int]
    rpc_layer: Optional[str] = None
    environment: str = ""
    session_master: Optional[str] = None  # TF_CONFIG's "session_master": a TF1 master
    given_index: Optional[int] = None  # the index as written (None: absent, then 0)


def _split_top_level(text: str) -> list:
    """`text` split at the commas that are outside [...] groups."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        depth += (ch == "[") - (ch == "]")
        if depth < 0 or depth > 1:
            raise ValueError(f"Malformed Slurm hostlist {text!r}: unbalanced brackets")
        if ch == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    if depth:
        raise ValueError(f"Malformed Slurm hostlist {text!r}: unbalanced brackets")
    parts.append(text[start:])
    return parts


def _expand_ranges(group: str, hostlist: str) -> list:
    """'01-03,7' -> ['01', '02', '03', '7'] (zero padding kept, as Slurm does)."""
    out = []
    for item in group.split(","):
        match = _RANGE_RE.fullmatch(item.strip())
        if match is None:
            raise ValueError(f"Malformed Slurm hostlist {hostlist!r}: bad range {item!r}")
        lo, hi = match.group(1), match.group(2) or match.group(1)
        if int(hi) < int(lo):
            raise ValueError(f"Malformed Slurm hostlist {hostlist!r}: range {item!r} runs "
                             f"backwards")
        out.extend(str(n).zfill(len(lo)) for n in range(int(lo), int(hi) + 1))
    return out


def expand_hostlist(hostlist: str) -> list:
    """The host names of a Slurm hostlist, in order.

    Args:
      hostlist: e.g. "node[01-04]", "a[1,3-5],b2" or "n[1-2]-ib[0-1]" (every
        bracket group of one name multiplies, leftmost slowest).
    Returns:
      A list of host names: "node[01-03]" -> ["node01", "node02", "node03"].
    Raises:
      ValueError: unbalanced brackets, a bad range, or an empty name.
    """
    if not isinstance(hostlist, str):
        raise TypeError(f"A Slurm hostlist must be a string, not {type(hostlist).__name__}")
    hosts = []
    for name in _split_top_level(hostlist.strip()):
        if not name:
            raise ValueError(f"Malformed Slurm hostlist {hostlist!r}: an empty host name")
        expanded = [""]
        for piece in re.split(r"(\[[^\]]*\])", name):
            options = _expand_ranges(piece[1:-1], hostlist) if piece.startswith("[") \
                else [piece]
            expanded = [head + option for head in expanded for option in options]
        hosts.extend(expanded)
    return hosts


def expand_tasks_per_node(text: str) -> list:
    """Slurm's compressed per-node counts, expanded: "2(x3),1" -> [2, 2, 2, 1].

    Raises:
      ValueError: an item that is neither "N" nor "N(xM)".
    """
    counts = []
    for item in text.split(","):
        match = _COUNT_RE.fullmatch(item.strip())
        if match is None:
            raise ValueError(f"Malformed Slurm tasks-per-node {text!r}: bad item {item!r}")
        counts.extend([int(match.group(1))] * int(match.group(2) or 1))
    return counts


def from_tf_config(environ: Mapping) -> EnvironmentTask:
    """The cluster and task of `environ["TF_CONFIG"]`.

    TF_CONFIG is JSON as Kubeflow's TFJob and Vertex set it: {"cluster": {"chief":
    [...], "worker": [...], "ps": [...]}, "task": {"type": "worker", "index": 1},
    "rpc_layer": "grpc", "environment": "cloud", "session_master": "grpc://h:p"};
    every key is optional. An integer task type is taken as its string, as TF does.

    Returns:
      An EnvironmentTask; an absent or empty TF_CONFIG gives an empty cluster.
    Raises:
      ValueError: TF_CONFIG is not a JSON object, or a part has the wrong form.
    """
    text = environ.get("TF_CONFIG", "")
    if not text.strip():
        return EnvironmentTask({}, None, None)
    try:
        config = json.loads(text)
    except json.JSONDecodeError as e:
        raise ValueError(f"TF_CONFIG is not valid JSON: {e.msg} at column {e.colno}") from None
    if not isinstance(config, dict):
        raise ValueError(f"TF_CONFIG must be a JSON object, not {type(config).__name__}")
    cluster = config.get("cluster") or {}
    task = config.get("task") or {}
    if not isinstance(cluster, dict) or not isinstance(task, dict):
        raise ValueError("TF_CONFIG's 'cluster' and 'task' must be JSON objects")
    job, index = task.get("type"), task.get("index")
    if isinstance(job, int) and not isinstance(job, bool):
        job = str(job)  # TF casts the task type to str: {"type": 1} names job "1"
    if job is not None and not isinstance(job, str):
        raise ValueError(f"TF_CONFIG's task type must be a string, not {job!r}")
    given = None
    if index is not None:
        try:
            index = given = int(index)
        except (TypeError, ValueError):
            raise ValueError(f"TF_CONFIG's task index must be an integer, not {index!r}") \
                from None
    elif job is not None:
        index = 0  # as TF: a task type without an index is task 0
    return EnvironmentTask(cluster, job, index, config.get("rpc_layer"),
                           config.get("environment") or "", config.get("session_master"),
                           given)


def _slurm_int(environ: Mapping, *names: str) -> int:
    for name in names:
        if environ.get(name, "").strip():
            try:
                return int(environ[name])
            except ValueError:
                raise ValueError(f"{name}={environ[name]!r} is not an integer") from None
    raise ValueError(f"Slurm's environment lacks {' and '.join(names)}")


def _slurm_text(environ: Mapping, *names: str) -> str:
    for name in names:
        if environ.get(name, "").strip():
            return environ[name]
    raise ValueError(f"Slurm's environment lacks {' and '.join(names)}")


def from_slurm(environ: Mapping, jobs: Optional[Mapping] = None,
               port_base: int = DEFAULT_SLURM_PORT_BASE,
               tasks_per_node: Optional[Mapping] = None) -> tuple:
    """The cluster of a Slurm job step, and this process's task in it.

    Tasks are numbered by Slurm rank: node by node in hostlist order, each
    node's tasks on ports port_base, port_base + 1, ...; ranks then fill the
    jobs in `jobs`' order (the first jobs["ps"] ranks are ps tasks, say).

    Args:
      environ: holds SLURM_PROCID, SLURM_STEP_NUM_TASKS (or SLURM_NTASKS),
        SLURM_STEP_NODELIST (or SLURM_JOB_NODELIST) and SLURM_STEP_TASKS_PER_NODE
        (or SLURM_TASKS_PER_NODE).
      jobs: job name -> number of tasks; default {"worker": every task}.
      port_base: the first port on each node.
      tasks_per_node: host -> number of tasks, overriding Slurm's counts.
    Returns:
      (EnvironmentTask, local_rank, max_tasks_per_node): local_rank is this
      task's position among the tasks of its node.
    Raises:
      ValueError: a variable is missing or malformed, or `jobs` does not add
        up to the number of tasks.
    """
    rank = _slurm_int(environ, "SLURM_PROCID")
    num_tasks = _slurm_int(environ, "SLURM_STEP_NUM_TASKS", "SLURM_NTASKS")
    hosts = expand_hostlist(_slurm_text(environ, "SLURM_STEP_NODELIST", "SLURM_JOB_NODELIST"))
    if tasks_per_node is not None:
        counts = [int(tasks_per_node.get(host, 0)) for host in hosts]
    else:
        counts = expand_tasks_per_node(_slurm_text(
            environ, "SLURM_STEP_TASKS_PER_NODE", "SLURM_TASKS_PER_NODE"))
        if len(counts) != len(hosts):
            raise ValueError(f"Slurm lists {len(hosts)} nodes ({hosts}) but tasks per node "
                             f"for {len(counts)}")
    addresses, local_ranks = [], []
    for host, count in zip(hosts, counts):
        for local in range(count):
            addresses.append(f"{host}:{port_base + local}")
            local_ranks.append(local)
    if len(addresses) != num_tasks:
        raise ValueError(f"Slurm's step has {num_tasks} tasks but its nodes hold "
                         f"{len(addresses)}")
    if not 0 <= rank < num_tasks:
        raise ValueError(f"SLURM_PROCID={rank} is not a rank of a {num_tasks}-task step")
    jobs = dict(jobs) if jobs else {"worker": num_tasks}
    if sum(jobs.values()) != num_tasks:
        raise ValueError(f"The jobs {jobs} ask for {sum(jobs.values())} tasks but Slurm "
                         f"started {num_tasks}")
    cluster, own, start = {}, (None, None), 0
    for job, n in jobs.items():
        cluster[job] = addresses[start:start + n]
        if start <= rank < start + n:
            own = (job, rank - start)
        start += n
    cluster = {job: tasks for job, tasks in cluster.items() if tasks}
    return (EnvironmentTask(cluster, own[0], own[1], "grpc"), local_ranks[rank],
            max(counts) if counts else 0)


def _slurm_options(environ: Mapping) -> tuple:
    """(jobs, port_base) from NBCLUSTER_SLURM_JOBS and NBCLUSTER_SLURM_PORT_BASE."""
    jobs = None
    text = environ.get("NBCLUSTER_SLURM_JOBS", "").strip()
    if text:
        try:
            jobs = json.loads(text)
        except json.JSONDecodeError:
            jobs = None
        if not isinstance(jobs, dict) or not all(
                isinstance(n, int) and n >= 0 for n in jobs.values()):
            raise ValueError(f"NBCLUSTER_SLURM_JOBS={text!r} is not a JSON object of job "
                             f"name to task count")
    base = environ.get("NBCLUSTER_SLURM_PORT_BASE", "").strip()
    if base and not base.isdigit():
        raise ValueError(f"NBCLUSTER_SLURM_PORT_BASE={base!r} is not a port number")
    return jobs, int(base) if base else DEFAULT_SLURM_PORT_BASE


def task_from_environment(environ: Mapping) -> EnvironmentTask:
    """This process's cluster and task: from TF_CONFIG if set, else from Slurm.

    Slurm's ranks are all "worker" tasks on ports from 8888 unless
    NBCLUSTER_SLURM_JOBS ('{"ps": 1, "worker": 3}') and NBCLUSTER_SLURM_PORT_BASE
    say otherwise.

    Raises:
      ValueError: neither TF_CONFIG nor SLURM_PROCID is set, or what is set
        does not name one task of its cluster.
    """
    if environ.get("TF_CONFIG", "").strip():
        task, source = from_tf_config(environ), "TF_CONFIG"
    elif environ.get("SLURM_PROCID", "").strip():
        task, source = from_slurm(environ, *_slurm_options(environ))[0], "Slurm's environment"
    else:
        raise ValueError("--from-env: neither TF_CONFIG nor Slurm's SLURM_PROCID is set")
    if not task.cluster:
        raise ValueError(f"{source} describes no cluster")
    if task.job is None:
        raise ValueError(f"{source} names no task (TF_CONFIG needs \"task\": {{\"type\": "
                         f"..., \"index\": ...}})")
    if task.job not in task.cluster:
        raise ValueError(f"{source}'s task {task.job}:{task.index} is not in its cluster "
                         f"(jobs: {sorted(task.cluster)}); a task outside the cluster, such "
                         f"as an evaluator, runs no server")
    return task
