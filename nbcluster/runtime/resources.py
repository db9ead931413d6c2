"""Resources that outlive steps (variables, queues), grouped into containers.

Rule: a resource is found by (container, name), as TF finds it by node name,
so every session and graph on a task that names the same variable shares it.
"""
from __future__ import annotations

import sys
import threading
from typing import Callable, Iterable, Optional

import numpy as np

from nbcluster import errors


class VariableResource:
    """A variable's current value. An update replaces the array, or writes into
    it only while nothing but this variable holds it (`sole_array`), so a value
    handed out (a fetch, a Send, a step's input) stays a consistent snapshot."""

    def __init__(self, name: str, dtype, shape) -> None:
        self.name = name
        self.dtype = dtype
        self.shape = shape
        self.lock = threading.Lock()  # use_locking's: held by a whole update
        self._swap = threading.Lock()  # a reader never takes an array being written
        self._value = None

    @property
    def initialized(self) -> bool:
        return self._value is not None

    def read(self):
        with self._swap:
            value = self._value
        if value is None:
            raise errors.FailedPreconditionError(
                None, None, f"Attempting to use uninitialized value {self.name}")
        return value

    def write(self, value) -> None:
        if isinstance(value, np.ndarray):
            value.flags.writeable = False
        with self._swap:
            self._value = value

    def sole_array(self) -> "_SoleArray":
        """A context whose value is the array, writable, when no one but this variable
        holds it (no fetch, Send, view or step input: CPython's reference count says
        so), so an update may write into it; else None. Readers wait meanwhile."""
        return _SoleArray(self)


class _SoleArray:
    """`VariableResource.sole_array`'s context (a class: a generator's costs a
    training step more than the small updates it guards)."""

    __slots__ = ("_res", "_array")

    def __init__(self, res: VariableResource) -> None:
        self._res = res
        self._array = None

    def __enter__(self) -> Optional[np.ndarray]:
        res = self._res
        res._swap.acquire()
        value = res._value
        # The references: res._value, `value`, and getrefcount's argument.
        if type(value) is np.ndarray and value.base is None and sys.getrefcount(value) <= 3:
            value.flags.writeable = True
            self._array = value
            return value
        return None

    def __exit__(self, *exc) -> None:
        array, self._array = self._array, None
        if array is not None:
            array.flags.writeable = False
        self._res._swap.release()


class ResourceMgr:
    """Containers of named resources; one per task (or per isolated session)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._containers: dict[str, dict[str, object]] = {}
        # One more each time a resource may have gone (delete, clear): a kernel that
        # keeps what it found may keep it while this stays the same.
        self.generation = 0

    def lookup_or_create(self, container: str, name: str, create: Callable[[], object],
                         kind: type):
        with self._lock:
            found = self._containers.setdefault(container, {}).get(name)
            if found is None:
                found = self._containers[container][name] = create()
        if not isinstance(found, kind):
            raise errors.InvalidArgumentError(
                None, None, f"Resource {container}/{name} is a {type(found).__name__}, "
                            f"not a {kind.__name__}")
        return found

    def delete(self, resource: object) -> bool:
        """Drops `resource` (found by identity, as a handle names it); whether it was here."""
        with self._lock:
            for entries in self._containers.values():
                for name, found in entries.items():
                    if found is resource:
                        del entries[name]
                        self.generation += 1
                        return True
        return False

    def lookup(self, container: str, name: str) -> Optional[object]:
        with self._lock:
            return self._containers.get(container, {}).get(name)

    def clear(self, containers: Optional[Iterable[str]] = None) -> None:
        """Drops the named containers (all when None), closing what can close."""
        with self._lock:
            names = list(self._containers) if containers is None else list(containers)
            dropped = [self._containers.pop(n, {}) for n in names]
            self.generation += 1
        for container in dropped:
            for resource in container.values():
                close = getattr(resource, "cancel_all", None)
                if close is not None:
                    close()

    def containers(self) -> list:
        with self._lock:
            return sorted(self._containers)

    def names(self, container: str) -> list:
        with self._lock:
            return sorted(self._containers.get(container, {}))
