"""The clusters and in-kernel servers this kernel's %tfserver magics started, by name.

Rule: whatever is added here is stopped by `stop_all`, which never raises, so
it can run from atexit or an extension unload whatever state things are in.
"""
from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Any, Optional

KINDS = ("local", "ssh", "slurm", "connected", "server")


@dataclass
class Entry:
    """One named thing: a Cluster ("local", "ssh", "slurm", "connected") or a Server ("server").

    Attributes:
      name: the registry name (a cluster's user variable, or job:task of a server).
      kind: one of KINDS.
      obj: the Cluster or Server.
      task: (job, index) of an in-kernel server, else None.
    """
    name: str
    kind: str
    obj: Any
    task: Optional[tuple] = None

    @property
    def target(self) -> str:
        """The target a Session would use: worker 0 where there is one, else the first task."""
        if self.kind == "server":
            return self.obj.target
        targets = self.obj.targets
        key = ("worker", 0) if ("worker", 0) in targets else min(targets)
        return f"{targets[key]} ({key[0]}:{key[1]})"

    @property
    def tasks(self) -> str:
        """'ps=1 worker=2' for a cluster; 'job:task' for a server."""
        if self.kind == "server":
            return f"{self.task[0]}:{self.task[1]}"
        spec = self.obj.spec
        return " ".join(f"{job}={spec.num_tasks(job)}" for job in spec.jobs)


class Registry:
    """Named entries in the order they were added; names are unique."""

    def __init__(self) -> None:
        self._entries: dict = {}

    def add(self, name: str, kind: str, obj: Any, task: Optional[tuple] = None) -> Entry:
        """Records `obj` under `name`.

        Raises:
          ValueError: `name` is taken (the message says how to free it).
        """
        assert kind in KINDS, kind
        self.ensure_free(name)
        entry = self._entries[name] = Entry(name, kind, obj, task)
        return entry

    def ensure_free(self, name: str) -> None:
        """Raises ValueError if `name` is taken (the message says how to free it)."""
        if name in self._entries:
            raise ValueError(f"{name} already runs in this kernel at "
                             f"{self._entries[name].target}; stop it first with "
                             f"%tfserver stop {name}")

    def get(self, name: str) -> Entry:
        """The entry called `name`.

        Raises:
          ValueError: no such name (the message lists the known ones).
        """
        try:
            return self._entries[name]
        except KeyError:
            known = ", ".join(self._entries) or "none"
            raise ValueError(f"no cluster or server named {name!r} in this kernel "
                             f"(known: {known})") from None

    def find(self, obj: Any) -> Optional[Entry]:
        """The entry holding `obj` itself, if any (so a user variable can name it)."""
        return next((e for e in self._entries.values() if e.obj is obj), None)

    def entries(self) -> list:
        return list(self._entries.values())

    def __contains__(self, name: str) -> bool:
        return name in self._entries

    def __len__(self) -> int:
        return len(self._entries)

    def stop(self, name: str) -> Entry:
        """Stops `name` and forgets it (forgotten even if stopping raises).

        Raises:
          ValueError: no such name.
        """
        entry = self.get(name)
        del self._entries[name]
        entry.obj.stop()
        return entry

    def stop_all(self) -> list:
        """Stops every entry, newest first; returns their names. Never raises:
        a failure is reported on stderr and the rest are still stopped."""
        names = []
        for name in reversed(list(self._entries)):
            entry = self._entries.pop(name)
            try:
                entry.obj.stop()
            except Exception as e:  # noqa: BLE001 - at exit, keep stopping the others
                print(f"tfserver: error: stopping {name!r}: {e}", file=sys.stderr)
            names.append(name)
        return names

    def table(self) -> str:
        """A plain-text table of the entries (NAME KIND TASKS TARGET)."""
        if not self._entries:
            return "no clusters or servers started in this kernel"
        rows = [("NAME", "KIND", "TASKS", "TARGET")]
        rows += [(e.name, e.kind, e.tasks, e.target) for e in self._entries.values()]
        widths = [max(len(row[i]) for row in rows) for i in range(3)]
        return "\n".join("  ".join(cell.ljust(w) for cell, w in zip(row, widths)) + "  " + row[3]
                         for row in rows)
