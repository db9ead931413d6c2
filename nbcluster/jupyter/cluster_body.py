"""What the %tfserver magics are told about a cluster: cell bodies, --cluster values, job:task.

Pure parsing, no processes: every function here turns user text (or a user
variable) into plain values, or raises ValueError / TypeError naming the
offending text.

A `%%tfserver cluster` body is one of
    ps: 1                      job counts (YAML-like), started by a launcher
    worker: 2
    {"ps": 1, "worker": 2}     the same counts as JSON
    worker: [h1:2222, h2:2222] explicit addresses (YAML list, block list or JSON),
                               one task started per address
    worker:                    a job with its tasks' devices: `tasks: N` or
      tasks: 2                 `addresses: [...]`, and optionally `cpus` (CPU
      cpus: 2                  devices per task) and `gpus` (CUDA_VISIBLE_DEVICES
      gpus: ["0", "1"]         per task, "none": no GPU); a list: one per task
"""
from __future__ import annotations

import json
import os
import re
import textwrap
from dataclasses import dataclass
from typing import Optional

import yaml

from nbcluster import errors
from nbcluster.framework.cluster_spec import ClusterSpec, parse_address
from nbcluster.framework.device_spec import is_valid_job_name
from nbcluster.launch.task_devices import task_devices
from nbcluster.proto.config_pb2 import ConfigProto
from nbcluster.server.options import load_cluster, load_config

_TASK_RE = re.compile(r"\s*(?:/job:)?(?P<job>[A-Za-z]\w*)(?::|/task:)(?P<index>\d+)\s*")


@dataclass(frozen=True)
class ClusterRequest:
    """A parsed cell body: job counts (start that many tasks) or a spec (these addresses),
    and the devices of some jobs' tasks ({job: {"cpus": ..., "gpus": ...}}, for the
    `devices=` of `Cluster.local` / `from_spec` / `ssh`)."""
    counts: Optional[dict] = None
    spec: Optional[ClusterSpec] = None
    devices: Optional[dict] = None


_JOB_KEYS = ("tasks", "addresses", "cpus", "gpus")


class _Loader(yaml.SafeLoader):
    """YAML 1.1 without its surprises: `1:30` stays a string (not sexagesimal 90),
    `yes` is not True, and a job given twice is an error rather than overwritten."""

    def construct_mapping(self, node, deep=False):
        seen = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            if key in seen:
                raise ValueError(f"line {key_node.start_mark.line + 1}: job {key!r} is given "
                                 f"twice")
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


_Loader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers
            if tag not in ("tag:yaml.org,2002:int", "tag:yaml.org,2002:float",
                           "tag:yaml.org,2002:bool")]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()}
_Loader.add_implicit_resolver("tag:yaml.org,2002:int", re.compile(r"^[-+]?[0-9]+$"),
                              list("-+0123456789"))


def parse_cluster_body(body: str) -> ClusterRequest:
    """The cluster a `%%tfserver cluster` cell body describes.

    Args:
      body: the cell's text (YAML-like `job: count` / `job: [addresses]` lines, or JSON).
    Returns:
      A ClusterRequest with `counts` ({job: n}, jobs with 0 tasks dropped) or `spec`.
    Raises:
      ValueError: empty or malformed body, a bad job name, a negative or
        non-integer count, or counts mixed with addresses.
    """
    text = textwrap.dedent(body).rstrip()  # leading lines kept: errors quote cell lines
    if not text.strip():
        raise ValueError("the cell body is empty: describe the cluster, e.g. 'ps: 1' and "
                         "'worker: 2' on two lines")
    if text.lstrip().startswith("{"):
        try:
            data = json.loads(text, object_pairs_hook=_unique_keys)
        except json.JSONDecodeError as e:
            raise ValueError(f"bad cluster JSON: {e.msg} at line {e.lineno} column "
                             f"{e.colno}") from None
    else:
        data = _load_yaml(text)
    if not isinstance(data, dict) or not data:
        raise ValueError(f"the cell body must map job names to task counts or addresses "
                         f"('worker: 2'), not {text.strip().splitlines()[0]!r}")
    for job in data:
        if not isinstance(job, str) or not is_valid_job_name(job):
            raise ValueError(f"bad job name {job!r}: it must start with a letter and hold "
                             f"only letters, digits and '_'")
    devices = {job: _job_devices(job, data) for job in list(data) if _is_job_mapping(data[job])}
    counted = [job for job, value in data.items() if isinstance(value, int)]
    if len(counted) == len(data):
        request = ClusterRequest(counts=_counts(data))
        jobs = {job: range(n) for job, n in request.counts.items()}
    elif counted:
        raise ValueError(f"give every job either a task count or its addresses: job "
                         f"{counted[0]!r} has a count, job "
                         f"{next(j for j in data if j not in counted)!r} does not")
    else:
        request = ClusterRequest(spec=_spec(data))
        jobs = {job: request.spec.task_indices(job) for job in request.spec.jobs}
    devices = {job: wanted for job, wanted in devices.items() if wanted and job in jobs}
    if not devices:
        return request
    task_devices(devices, jobs)  # ValueError / TypeError naming a bad value
    return ClusterRequest(request.counts, request.spec, devices)


def _is_job_mapping(value) -> bool:
    return isinstance(value, dict) and any(key in _JOB_KEYS for key in value)


def _job_devices(job: str, data: dict) -> dict:
    """Replaces data[job], a {tasks|addresses, cpus, gpus} mapping, by its task count or
    addresses; returns its device settings."""
    value = data[job]
    unknown = [key for key in value if key not in _JOB_KEYS]
    if unknown:
        raise ValueError(f"job {job!r}: unknown key {unknown[0]!r} (give 'tasks' or "
                         f"'addresses', and optionally 'cpus' and 'gpus')")
    if ("tasks" in value) == ("addresses" in value):
        raise ValueError(f"job {job!r}: give exactly one of 'tasks: N' and 'addresses: "
                         f"[host:port, ...]'")
    if "tasks" in value and (isinstance(value["tasks"], bool) or
                             not isinstance(value["tasks"], int)):
        raise ValueError(f"job {job!r}: 'tasks' must be a whole number, not "
                         f"{value['tasks']!r}")
    if "addresses" in value and isinstance(value["addresses"], int):
        raise ValueError(f"job {job!r}: 'addresses' must list 'host:port' addresses, not "
                         f"{value['addresses']!r}")
    data[job] = value["tasks"] if "tasks" in value else value["addresses"]
    return {key: value[key] for key in ("cpus", "gpus") if key in value}


def _unique_keys(pairs: list) -> dict:
    seen: dict = {}
    for key, value in pairs:
        if key in seen:
            raise ValueError(f"job {key!r} is given twice")
        seen[key] = value
    return seen


EXPECTED_LINE = "expected 'job: count' or 'job: [addresses]', e.g. 'worker: 2'"
# a top-level line: `job: value` or `job:` (a block below), a comment, or a block list item
_TOP_LINE_RE = re.compile(r"(?:[^\s:#][^:#]*:(?:\s.*)?|#.*|-(?:\s.*)?)")


def _bad_line(text: str) -> Optional[str]:
    """'line N: 'TEXT': expected ...' for the first top-level line that is no `job: value`
    line, else None. Plain words for what YAML would call a mapping error, pointing at
    the line the user wrote rather than where YAML noticed."""
    for number, line in enumerate(text.splitlines()):
        if line.strip() and not line[0].isspace() and not _TOP_LINE_RE.fullmatch(line.rstrip()):
            return f"line {number + 1}: {line.strip()!r}: {EXPECTED_LINE}"
    return None


def _load_yaml(text: str):
    try:
        data = yaml.load(text, Loader=_Loader)  # noqa: S506 - a SafeLoader subclass
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        bad = _bad_line(text)
        if bad is not None:
            raise ValueError(bad) from None
        lines = text.splitlines()
        # YAML marks where it noticed (often past the end); the user's line is the last
        # non-blank one up to there
        number = min(mark.line, len(lines) - 1) if mark else len(lines) - 1
        while number > 0 and not lines[number].strip():
            number -= 1
        indented = " (indented: a job starts at the beginning of its line)" \
            if lines[number][:1].isspace() and ":" in lines[number] else ""
        raise ValueError(f"line {number + 1}: {lines[number].strip()!r}{indented}: "
                         f"{EXPECTED_LINE} (YAML: {e.problem or e.context})") from None
    except yaml.YAMLError as e:
        raise ValueError(f"{EXPECTED_LINE} (YAML: {' '.join(str(e).split())})") from None
    if not isinstance(data, dict):
        bad = _bad_line(text)
        if bad is not None:
            raise ValueError(bad)
    return data


def _counts(data: dict) -> dict:
    for job, n in data.items():
        if isinstance(n, bool) or n < 0:
            raise ValueError(f"job {job!r}: the task count must be a whole number >= 0, "
                             f"not {n!r}")
    counts = {job: n for job, n in data.items() if n > 0}
    if not counts:
        raise ValueError("every job has 0 tasks: nothing to start")
    return counts


def _spec(data: dict) -> ClusterSpec:
    for job, tasks in data.items():
        if isinstance(tasks, str) and ":" not in tasks:
            raise ValueError(f"job {job!r}: expected a task count or 'host:port' addresses, "
                             f"not {tasks!r}")
        if isinstance(tasks, str):  # `worker: h1:2222, h2:2222`, a YAML plain scalar
            data[job] = [a.strip() for a in tasks.split(",") if a.strip()]
        elif not isinstance(tasks, (list, dict)):
            raise ValueError(f"job {job!r}: expected a task count or a list of "
                             f"'host:port' addresses, not {tasks!r}")
    spec = ClusterSpec(data)
    for job in spec.jobs:
        for index in spec.task_indices(job):
            address = spec.task_address(job, index)
            try:
                host, _ = parse_address(address)
            except errors.InvalidArgumentError as e:
                raise ValueError(f"job {job!r}: {e.message}") from None
            if host.isdigit():  # `ps: 1:30` is a typo, not host "1"
                raise ValueError(f"job {job!r}: {address!r} is neither a task count nor a "
                                 f"'host:port' address")
    return spec


def parse_task(text: str) -> tuple:
    """("worker", 1) from "worker:1" (or "/job:worker/task:1").

    Raises:
      ValueError: `text` is not job:task.
    """
    match = _TASK_RE.fullmatch(text)
    if match is None:
        raise ValueError(f"bad task {text!r}: expected job:task, e.g. worker:0")
    return match["job"], int(match["index"])


def resolve_cluster(value: str, user_ns: dict) -> ClusterSpec:
    """The cluster a `--cluster` value names: a user variable, JSON text or a JSON file.

    Args:
      value: the name of a variable holding a dict, ClusterSpec, ClusterDef or an
        object with a `.spec` (a Cluster); else JSON text or the path of a JSON file.
      user_ns: the kernel's user namespace.
    Returns:
      The ClusterSpec.
    Raises:
      ValueError, TypeError: nothing readable under that name, or a malformed cluster.
    """
    if value.isidentifier() and value in user_ns:
        obj = user_ns[value]
        obj = getattr(obj, "spec", obj)
        if not isinstance(obj, (dict, ClusterSpec)) and not hasattr(obj, "SerializeToString"):
            raise TypeError(f"--cluster: variable {value!r} holds a {type(obj).__name__}, "
                            f"not a dict or ClusterSpec")
        return ClusterSpec(obj)
    if value.isidentifier() and not os.path.isfile(value):
        raise ValueError(f"--cluster: {value!r} is neither a variable, a JSON object nor a "
                         f"readable file")
    return ClusterSpec(load_cluster(value))


def resolve_config(value: Optional[str], user_ns: dict) -> Optional[ConfigProto]:
    """A ConfigProto from a `--config` value: a user variable, JSON text or a JSON file.

    Raises:
      ValueError, TypeError: unreadable value or malformed ConfigProto JSON.
    """
    if value is None:
        return None
    if value.isidentifier() and value in user_ns:
        obj = user_ns[value]
        if not hasattr(obj, "SerializeToString"):
            raise TypeError(f"--config: variable {value!r} holds a {type(obj).__name__}, "
                            f"not a ConfigProto")
        return ConfigProto.FromString(obj.SerializeToString())
    return load_config(value)


def parse_targets(values: list) -> dict:
    """Connect arguments -> ({(job, index): address}, [addresses whose task is unknown]).

    Each value is `job:task=grpc://host:port`, a bare `grpc://host:port` (its task
    is asked later), or a cluster JSON object.

    Raises:
      ValueError: a value of none of these forms.
    """
    known: dict = {}
    unknown: list = []
    for value in values:
        if value.lstrip().startswith("{"):
            spec = ClusterSpec(load_cluster(value))
            for job in spec.jobs:
                for index in spec.task_indices(job):
                    known[(job, index)] = spec.task_address(job, index)
            continue
        name, _, target = value.rpartition("=")
        address = target[len("grpc://"):] if target.startswith("grpc://") else target
        if not re.fullmatch(r"\S+:\d+", address):
            raise ValueError(f"bad target {value!r}: expected grpc://host:port, "
                             f"job:task=grpc://host:port or a cluster JSON object")
        if name:
            known[parse_task(name)] = address
        else:
            unknown.append(address)
    return known, unknown
