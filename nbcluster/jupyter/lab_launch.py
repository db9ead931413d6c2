"""The clusters JupyterLab's "New cluster" form starts: owned by the Jupyter server process.

Rules: a form is checked whole before anything starts (FormError, an HTTP 400
naming the field); a started cluster is held here until it is stopped (its
finalizer would stop it once nobody refers to it), and its tasks end with the
server (launcher.py ties them to their owner). Only these clusters can be
restarted task by task through REST: any other cluster's processes are held
by the Cluster object of the kernel that started it, which alone can restart
them (`%tfserver restart` there).

A form (JSON):
  {"name": "demo", "launcher": "local", "jobs": {"ps": 1, "worker": 2}}
  "launcher": "ssh" adds "hosts": ["node1", "node2"] and optionally "user",
  "python", "port", "key" (an identity file on this host) and "ssh_options"
  (["StrictHostKeyChecking=accept-new"], each an ssh `-o`; none that runs a
  command); "launcher": "slurm" optionally "partition", "time" (minutes or
  "HH:MM:SS"), "nodes".
"""
from __future__ import annotations

import re
import threading

__all__ = ["FormError", "LAUNCHERS", "parse_form", "start", "owned", "stop", "restart"]

LAUNCHERS = ("local", "ssh", "slurm")
MAX_TASKS = 64  # per job: a form is typed by hand, and each task is a process
_NAME = re.compile(r"[A-Za-z0-9_.-]{1,64}$")
_JOB = re.compile(r"[A-Za-z][A-Za-z0-9_]{0,31}$")
_HOST = re.compile(r"[A-Za-z0-9_.:\[\]-]{1,253}$")  # a name or address, never an option
_PATH = re.compile(r"[A-Za-z0-9_./+~-]{1,400}$")
_SSH_OPTION = re.compile(r"([A-Za-z]{2,40})=([A-Za-z0-9_./:,@%+~-]{1,200})$")
# ssh options that run a local or remote command: never from a form
_COMMAND_OPTIONS = {"proxycommand", "localcommand", "permitlocalcommand", "knownhostscommand",
                    "remotecommand", "match", "include", "proxyusefdpass"}
_TIME = re.compile(r"(\d{1,5}|\d{1,2}:\d{2}:\d{2}|\d{1,3}-\d{1,2}:\d{2}:\d{2})$")

_lock = threading.Lock()  # guards _clusters
_clusters: dict = {}  # record id -> the Cluster this server started


class FormError(ValueError):
    """A bad "New cluster" form; the message names the field and what it takes."""


def _text(form: dict, key: str, pattern: re.Pattern, what: str, default=None):
    value = form.get(key, default)
    if value is None or value == "":
        return default
    if not isinstance(value, str) or not pattern.match(value):
        raise FormError(f"{key}: {what}, not {value!r}")
    return value


def parse_form(form) -> dict:
    """The checked form: {"name", "launcher", "jobs", and the launcher's options}.

    Raises:
      FormError: naming the first bad field.
    """
    if not isinstance(form, dict):
        raise FormError("the form must be a JSON object")
    unknown = set(form) - {"name", "launcher", "jobs", "hosts", "user", "python", "port",
                           "key", "ssh_options", "partition", "time", "nodes"}
    if unknown:
        raise FormError(f"unknown fields {sorted(unknown)}")
    launcher = form.get("launcher", "local")
    if launcher not in LAUNCHERS:
        raise FormError(f"launcher: one of {', '.join(LAUNCHERS)}, not {launcher!r}")
    jobs = form.get("jobs")
    if not isinstance(jobs, dict) or not jobs:
        raise FormError('jobs: an object of job names and task counts, e.g. {"ps": 1, '
                        '"worker": 2}')
    for job, count in jobs.items():
        if not _JOB.match(job):
            raise FormError(f"jobs: a job name is a letter then letters, digits or _, "
                            f"not {job!r}")
        if isinstance(count, bool) or not isinstance(count, int) or not 1 <= count <= MAX_TASKS:
            raise FormError(f"jobs: the task count of {job!r} must be a whole number from 1 "
                            f"to {MAX_TASKS}, not {count!r}")
    out = {"name": _text(form, "name", _NAME, "letters, digits, '.', '_' or '-' (at most "
                                               "64)"),
           "launcher": launcher, "jobs": dict(jobs)}
    if launcher == "ssh":
        hosts = form.get("hosts")
        if not isinstance(hosts, list) or not hosts or not all(
                isinstance(h, str) and _HOST.match(h) and not h.startswith("-") for h in hosts):
            raise FormError(f"hosts: a list of host names for the SSH launcher, not {hosts!r}")
        out.update(hosts=hosts, user=_text(form, "user", _NAME, "a user name"),
                   python=_text(form, "python", _PATH, "the remote interpreter's path",
                                "python3"),
                   key=_text(form, "key", _PATH, "the path of an identity file"),
                   port=_port(form.get("port", 22)), ssh_options=_ssh_options(form))
    if launcher == "slurm":
        nodes = form.get("nodes")
        if nodes is not None and (isinstance(nodes, bool) or not isinstance(nodes, int)
                                  or not 1 <= nodes <= 1024):
            raise FormError(f"nodes: a whole number of nodes from 1 to 1024, not {nodes!r}")
        out.update(partition=_text(form, "partition", _NAME, "a partition name"),
                   time=_text(form, "time", _TIME, "minutes or HH:MM:SS"), nodes=nodes)
    return out


def _port(port) -> int:
    if isinstance(port, bool) or not isinstance(port, int) or not 1 <= port <= 65535:
        raise FormError(f"port: the SSH port, a whole number from 1 to 65535, not {port!r}")
    return port


def _ssh_options(form: dict) -> tuple:
    given = form.get("ssh_options") or []
    if not isinstance(given, list):
        raise FormError(f"ssh_options: a list of 'Name=value' ssh options, not {given!r}")
    out: list = []
    for option in given:
        match = _SSH_OPTION.match(option) if isinstance(option, str) else None
        if match is None:
            raise FormError(f"ssh_options: each is 'Name=value' (an ssh -o), not {option!r}")
        if match.group(1).lower() in _COMMAND_OPTIONS:
            raise FormError(f"ssh_options: {match.group(1)} runs a command; it is not taken "
                            f"from a form")
        out += ["-o", option]
    return tuple(out)


def start(form: dict, timeout: float = 60.0):
    """Starts the cluster a checked form (`parse_form`) describes and holds it.

    Blocking (waits for every task): the handler runs it in a thread.
    Returns:
      (record id, the Cluster).
    Raises:
      LaunchError: it did not start (the launcher's message says why).
    """
    from nbcluster.launch import Cluster, records
    kind, common = form["launcher"], {"jobs": form["jobs"], "name": form["name"],
                                      "timeout": timeout}
    if kind == "local":
        cluster = Cluster.local(**common)
    elif kind == "ssh":
        cluster = Cluster.ssh(form["hosts"], user=form["user"], python=form["python"],
                              key=form["key"], port=form["port"],
                              ssh_options=form["ssh_options"], **common)
    else:
        cluster = Cluster.slurm(partition=form["partition"], time=form["time"],
                                nodes=form["nodes"], **common)
    record_id = records.record_id(cluster) or records.write(cluster).stem
    with _lock:
        _clusters[record_id] = cluster
    return record_id, cluster


def owned(record_id: str):
    """The Cluster this server started under record `record_id`, else None."""
    with _lock:
        return _clusters.get(record_id)


def stop(record_id: str) -> list:
    """Stops a cluster this server started; the names of its tasks.

    Raises:
      KeyError: this server did not start it.
    """
    with _lock:
        cluster = _clusters.pop(record_id)
    names = [f"/job:{job}/task:{index}" for job, index in sorted(cluster.targets)]
    cluster.stop()
    return names


def restart(record_id: str, job: str, index: int) -> str:
    """Restarts one task of a cluster this server started, as `%tfserver restart` does
    (Cluster.restart: killed if alive, started again at its address); its target.

    Raises:
      KeyError: this server did not start it.
      ValueError: no such task. LaunchError: it did not come back.
    """
    cluster = owned(record_id)
    if cluster is None:
        raise KeyError(record_id)
    return cluster.restart(job, index)


def stop_all() -> None:
    """Stops every cluster this server started (at the server's shutdown)."""
    with _lock:
        clusters = list(_clusters.values())
        _clusters.clear()
    for cluster in clusters:
        cluster.stop()
