"""Unit tier: the registry of what the magics started, and which errors stay one line."""
from __future__ import annotations

import pytest

from nbcluster import errors
from nbcluster.jupyter.failures import one_line
from nbcluster.jupyter.tfserver_registry import Registry
from nbcluster.launch import LaunchError

pytestmark = pytest.mark.timeout(30)


class _Thing:
    def __init__(self, log: list, name: str, fail: bool = False) -> None:
        self.log, self.name, self.fail = log, name, fail
        self.target = f"grpc://localhost:{len(log) + 1000}"

    def stop(self) -> None:
        self.log.append(self.name)
        if self.fail:
            raise OSError(f"{self.name} would not stop")


def test_names_are_unique_and_lookups_name_the_known_ones():
    registry, log = Registry(), []
    registry.add("worker:0", "server", _Thing(log, "a"), ("worker", 0))
    with pytest.raises(ValueError, match=r"worker:0 already runs in this kernel at "
                                         r"grpc://localhost:1000; stop it first"):
        registry.add("worker:0", "server", _Thing(log, "b"), ("worker", 0))
    with pytest.raises(ValueError, match=r"no cluster or server named 'x' in this kernel "
                                         r"\(known: worker:0\)"):
        registry.get("x")
    assert registry.stop("worker:0").name == "worker:0" and log == ["a"]
    assert len(registry) == 0 and "no clusters or servers" in registry.table()


def test_stop_all_keeps_going_past_a_failure(capsys):
    registry, log = Registry(), []
    for name in ("a", "b", "c"):
        registry.add(f"{name}:0", "server", _Thing(log, name, fail=name == "b"), (name, 0))
    assert registry.stop_all() == ["c:0", "b:0", "a:0"]
    assert log == ["c", "b", "a"] and len(registry) == 0
    assert capsys.readouterr().err.strip() == "tfserver: error: stopping 'b:0': b would not stop"
    assert registry.stop_all() == []


def test_table_columns():
    registry = Registry()
    registry.add("ps:0", "server", _Thing([], "p"), ("ps", 0))
    header, row = registry.table().splitlines()
    assert header.split() == ["NAME", "KIND", "TASKS", "TARGET"]
    assert row.split() == ["ps:0", "server", "ps:0", "grpc://localhost:1000"]


def test_one_line():
    assert one_line(ValueError("plain")) == "plain"
    assert one_line(errors.UnavailableError(None, None, "gone")) == "gone"
    launch = LaunchError("task /job:ps/task:0 exited; its log ends:\nTraceback ...\n"
                         "  File x\nOSError: port taken\n")
    assert one_line(launch) == "task /job:ps/task:0 exited; its log ends: ... OSError: port taken"
    assert one_line(TimeoutError()) == "TimeoutError"
