"""L0: device names ("/job:ps/replica:0/task:1/device:CPU:0") as values.

A pure value module: parse, print, merge and match device specs; no I/O.
Parsing accepts what TensorFlow's Python `DeviceSpec` accepts (legacy
"/cpu:0", bare "GPU:1", "*" wildcards, no leading slash) but holds each part
to the rules of TF's C++ `DeviceNameUtils` (job names `[A-Za-z][A-Za-z0-9_]*`,
decimal indices), so every spec it yields prints to a name TF can parse.
"""
from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass

from nbcluster import errors

_NAME_RE = re.compile(r"[A-Za-z][A-Za-z0-9_]*\Z")
# Types accepted without the "device:" prefix ("/cpu:0", "GPU:1"), as in TF.
_LEGACY_DEVICE_TYPES = frozenset({"CPU", "GPU", "TPU", "CUSTOM", "EPU"})
# Index fields are int32 in TF's protos and C++.
_MAX_INDEX = 2**31 - 1


def is_valid_job_name(name: object) -> bool:
    """Whether `name` can be a job in a device name: a letter, then [A-Za-z0-9_]."""
    return isinstance(name, str) and _NAME_RE.match(name) is not None


def _invalid(message: str) -> errors.InvalidArgumentError:
    return errors.InvalidArgumentError(None, None, message)


def _check_job(job: object) -> str | None:
    if job is None:
        return None
    if not is_valid_job_name(job):
        raise _invalid("Invalid job name %r in device spec: a job name is a letter "
                       "followed by letters, digits or '_'" % (job,))
    return job


def _check_index(what: str, value: object) -> int | None:
    if value is None:
        return None
    if isinstance(value, str) and value.isascii() and value.isdigit():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise _invalid("Invalid %s %r in device spec: expected a non-negative integer"
                       % (what, value))
    if not 0 <= value <= _MAX_INDEX:
        raise _invalid("Invalid %s %r in device spec: out of range [0, %d]"
                       % (what, value, _MAX_INDEX))
    return value


def _check_device_type(device_type: object) -> str | None:
    if device_type is None:
        return None
    if not isinstance(device_type, str) or _NAME_RE.match(device_type) is None:
        raise _invalid("Invalid device type %r in device spec" % (device_type,))
    # TF keeps lowercase "cpu"/"gpu" working by upper-casing them.
    return device_type.upper() if device_type.upper() in ("CPU", "GPU") else device_type


@dataclass(frozen=True)
class DeviceSpec:
    """A possibly partial device specification; unset parts are None.

    Args:
      job: job name, e.g. "worker".
      replica: replica index.
      task: task index.
      device_type: "CPU", "GPU", ... ("cpu"/"gpu" are upper-cased).
      device_index: device index; None means any device of the type.

    Raises:
      InvalidArgumentError: a part that cannot appear in a device name.

    Example:
      >>> DeviceSpec.from_string("/job:ps/task:1/cpu:0").to_string()
      '/job:ps/task:1/device:CPU:0'
    """

    job: str | None = None
    replica: int | None = None
    task: int | None = None
    device_type: str | None = None
    device_index: int | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "job", _check_job(self.job))
        object.__setattr__(self, "replica", _check_index("replica", self.replica))
        object.__setattr__(self, "task", _check_index("task", self.task))
        object.__setattr__(self, "device_type", _check_device_type(self.device_type))
        object.__setattr__(self, "device_index",
                           _check_index("device index", self.device_index))

    @classmethod
    def from_string(cls, spec: str | DeviceSpec | None) -> DeviceSpec:
        """Parses a device string; "" and None give the empty spec.

        Raises:
          InvalidArgumentError: a malformed string (the message quotes it).
          TypeError: `spec` is not a string.
        """
        if isinstance(spec, DeviceSpec):
            return spec
        if spec is None:
            return cls()
        if not isinstance(spec, str):
            raise TypeError("A device spec must be a string, got %s %r"
                            % (type(spec).__name__, spec))
        parts = _parse(spec)
        try:
            return cls(**parts)
        except errors.InvalidArgumentError as e:
            raise _invalid("Cannot parse device spec %r: %s" % (spec, e.message)) from None

    def parse_from_string(self, spec: str) -> DeviceSpec:
        """TF2 semantics: returns a new spec parsed from `spec`; self is unchanged."""
        return self.from_string(spec)

    def to_string(self) -> str:
        """The canonical form: /job:<j>/replica:<r>/task:<t>/device:<TYPE>:<i|*>."""
        parts = []
        if self.job is not None:
            parts.append("/job:" + self.job)
        if self.replica is not None:
            parts.append("/replica:%d" % self.replica)
        if self.task is not None:
            parts.append("/task:%d" % self.task)
        if self.device_type is not None:
            index = "*" if self.device_index is None else str(self.device_index)
            parts.append("/device:%s:%s" % (self.device_type, index))
        return "".join(parts)

    __str__ = to_string

    def make_merged_spec(self, dev: DeviceSpec | str) -> DeviceSpec:
        """A new spec: the parts `dev` sets override those of self."""
        dev = DeviceSpec.from_string(dev)
        return DeviceSpec(*(mine if theirs is None else theirs
                            for mine, theirs in zip(self._parts(), dev._parts())))

    def replace(self, **kwargs) -> DeviceSpec:
        """A new spec with the given fields replaced (None clears one)."""
        return dataclasses.replace(self, **kwargs)

    @property
    def is_fully_specified(self) -> bool:
        """Whether every part is set (a concrete device)."""
        return None not in self._parts()

    def _parts(self) -> tuple:
        return (self.job, self.replica, self.task, self.device_type, self.device_index)


def _parse(spec: str) -> dict:
    """Splits `spec` into DeviceSpec keyword arguments; raises on bad strings."""
    out: dict = {}

    def put(key, value):
        if key in out:
            raise _invalid("Device spec %r sets its %s twice" % (spec, key.replace("_", " ")))
        out[key] = None if value == "*" else value

    for piece in spec.split("/"):
        if not piece:
            continue
        fields = piece.split(":")
        head, n = fields[0], len(fields)
        if head in ("job", "replica", "task") and n == 2:
            put(head, fields[1])
        elif head == "device" and n in (2, 3):
            put("device_type", fields[1])
            out["device_index"] = None if n == 2 or fields[2] == "*" else fields[2]
        elif head.upper() in _LEGACY_DEVICE_TYPES and n in (1, 2):
            put("device_type", head.upper())
            out["device_index"] = None if n == 1 or fields[1] == "*" else fields[1]
        else:
            raise _invalid("Unknown part %r in device spec %r" % (piece, spec))
    return out


def canonical_name(job: str, replica: int, task: int, device_type: str, index: int) -> str:
    """The fully specified name of one device.

    Raises:
      InvalidArgumentError: a part is missing or invalid.

    Example:
      >>> canonical_name("w", 0, 1, "cpu", 0)
      '/job:w/replica:0/task:1/device:CPU:0'
    """
    spec = DeviceSpec(job, replica, task, device_type, index)
    if not spec.is_fully_specified:
        raise _invalid("A canonical device name needs every part, got %r" % spec.to_string())
    return spec.to_string()


def is_compatible(spec_constraint: DeviceSpec | str, full_device_name: DeviceSpec | str) -> bool:
    """Whether a device satisfies a (partial) constraint: every part the
    constraint sets, the device sets to the same value.

    Example:
      >>> is_compatible("/job:ps/device:CPU:*", "/job:ps/replica:0/task:1/device:CPU:0")
      True
    """
    constraint = DeviceSpec.from_string(spec_constraint)
    device = DeviceSpec.from_string(full_device_name)
    return all(want is None or want == have
               for want, have in zip(constraint._parts(), device._parts()))
