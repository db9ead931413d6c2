"""L0: the OpError taxonomy, one exception class per TensorFlow status code.

Codes equal TensorFlow's `error_codes.proto`, so a status read from a TF peer
maps to the same class here. Converting to and from gRPC status happens in
`rpc/` only; this module knows nothing of the wire.
"""
from __future__ import annotations

import traceback
import warnings
from typing import Any

OK = 0
CANCELLED = 1
UNKNOWN = 2
INVALID_ARGUMENT = 3
DEADLINE_EXCEEDED = 4
NOT_FOUND = 5
ALREADY_EXISTS = 6
PERMISSION_DENIED = 7
RESOURCE_EXHAUSTED = 8
FAILED_PRECONDITION = 9
ABORTED = 10
OUT_OF_RANGE = 11
UNIMPLEMENTED = 12
INTERNAL = 13
UNAVAILABLE = 14
DATA_LOSS = 15
UNAUTHENTICATED = 16


class OpError(Exception):
    """An error raised while building or running a graph.

    Args:
      node_def: the NodeDef of the failing node, if known, else None.
      op: the `Operation` that failed, if known, else None.
      message: what went wrong.
      *args: `args[0]` is the error code (UNKNOWN if absent); `args[1]`, if
        given, a dict of extra details (TF's "experimental payloads").
      node_name: the failing node's name when only the name is known (as on
        the wire); defaults to the name of `node_def` or `op`.

    Example:
      >>> e = OpError(None, None, "boom", INTERNAL, node_name="w/Assign")
      >>> (e.error_code, e.node_name, str(e))
      (13, 'w/Assign', 'boom')
    """

    def __init__(self, node_def: Any, op: Any, message: str, *args: Any,
                 node_name: str | None = None) -> None:
        super().__init__(message)
        self._node_def = node_def
        self._op = op
        self._message = message
        self._error_code = args[0] if args else UNKNOWN
        self._experimental_payloads = dict(args[1]) if len(args) > 1 else {}
        if node_name is None:
            node_name = getattr(node_def, "name", None) or getattr(op, "name", None)
        self.node_name = node_name

    @property
    def message(self) -> str:
        """The error message."""
        return self._message

    @property
    def op(self) -> Any:
        """The failing `Operation`, or None (always None for Send/Recv)."""
        return self._op

    @property
    def node_def(self) -> Any:
        """The NodeDef of the failing node, or None."""
        return self._node_def

    @property
    def error_code(self) -> int:
        """The integer status code (see the module constants)."""
        return self._error_code

    @property
    def experimental_payloads(self) -> dict:
        """Extra details attached to the error (TF's Abseil-style payloads)."""
        return self._experimental_payloads

    def __str__(self) -> str:
        frames = getattr(self._op, "traceback", None) if self._op is not None else None
        if not frames:
            return str(self._message)
        # Like TF: point at where the failing op was created in user code.
        header = "%s\n\nOriginal stack trace for %r:\n" % (self._message, self._op.name)
        return header + "".join(traceback.format_list(list(frames)))


class CancelledError(OpError):
    """An operation or step was cancelled."""

    def __init__(self, node_def, op, message, *args, node_name=None):
        super().__init__(node_def, op, message, CANCELLED, *args, node_name=node_name)


class UnknownError(OpError):
    """An error of unknown kind (also: a status code this process does not know)."""

    def __init__(self, node_def, op, message, error_code=UNKNOWN, *args, node_name=None):
        super().__init__(node_def, op, message, error_code, *args, node_name=node_name)


class InvalidArgumentError(OpError):
    """An operation received an invalid argument (bad value, shape, name...)."""

    def __init__(self, node_def, op, message, *args, node_name=None):
        super().__init__(node_def, op, message, INVALID_ARGUMENT, *args, node_name=node_name)


class DeadlineExceededError(OpError):
    """A deadline expired before the operation completed."""

    def __init__(self, node_def, op, message, *args, node_name=None):
        super().__init__(node_def, op, message, DEADLINE_EXCEEDED, *args, node_name=node_name)


class NotFoundError(OpError):
    """A requested entity (file, graph handle, node, session...) was not found."""

    def __init__(self, node_def, op, message, *args, node_name=None):
        super().__init__(node_def, op, message, NOT_FOUND, *args, node_name=node_name)


class AlreadyExistsError(OpError):
    """An entity we tried to create already exists."""

    def __init__(self, node_def, op, message, *args, node_name=None):
        super().__init__(node_def, op, message, ALREADY_EXISTS, *args, node_name=node_name)


class PermissionDeniedError(OpError):
    """The caller may not run this operation."""

    def __init__(self, node_def, op, message, *args, node_name=None):
        super().__init__(node_def, op, message, PERMISSION_DENIED, *args, node_name=node_name)


class ResourceExhaustedError(OpError):
    """Some resource (memory, quota, disk) ran out."""

    def __init__(self, node_def, op, message, *args, node_name=None):
        super().__init__(node_def, op, message, RESOURCE_EXHAUSTED, *args, node_name=node_name)


class FailedPreconditionError(OpError):
    """The system is not in a state to run this (e.g. uninitialized variable)."""

    def __init__(self, node_def, op, message, *args, node_name=None):
        super().__init__(node_def, op, message, FAILED_PRECONDITION, *args, node_name=node_name)


class AbortedError(OpError):
    """The operation was aborted, usually by a concurrent action."""

    def __init__(self, node_def, op, message, *args, node_name=None):
        super().__init__(node_def, op, message, ABORTED, *args, node_name=node_name)


class OutOfRangeError(OpError):
    """Iteration went past the valid input range (end of input)."""

    def __init__(self, node_def, op, message, *args, node_name=None):
        super().__init__(node_def, op, message, OUT_OF_RANGE, *args, node_name=node_name)


class UnimplementedError(OpError):
    """The operation is not implemented or not supported with these arguments."""

    def __init__(self, node_def, op, message, *args, node_name=None):
        super().__init__(node_def, op, message, UNIMPLEMENTED, *args, node_name=node_name)


class InternalError(OpError):
    """An invariant of the runtime was broken."""

    def __init__(self, node_def, op, message, *args, node_name=None):
        super().__init__(node_def, op, message, INTERNAL, *args, node_name=node_name)


class UnavailableError(OpError):
    """The service (a task, a server) is unavailable right now."""

    def __init__(self, node_def, op, message, *args, node_name=None):
        super().__init__(node_def, op, message, UNAVAILABLE, *args, node_name=node_name)


class DataLossError(OpError):
    """Unrecoverable data loss or corruption."""

    def __init__(self, node_def, op, message, *args, node_name=None):
        super().__init__(node_def, op, message, DATA_LOSS, *args, node_name=node_name)


class UnauthenticatedError(OpError):
    """The request lacks valid authentication credentials."""

    def __init__(self, node_def, op, message, *args, node_name=None):
        super().__init__(node_def, op, message, UNAUTHENTICATED, *args, node_name=node_name)


CODE_TO_EXCEPTION_CLASS: dict[int, type[OpError]] = {
    CANCELLED: CancelledError,
    UNKNOWN: UnknownError,
    INVALID_ARGUMENT: InvalidArgumentError,
    DEADLINE_EXCEEDED: DeadlineExceededError,
    NOT_FOUND: NotFoundError,
    ALREADY_EXISTS: AlreadyExistsError,
    PERMISSION_DENIED: PermissionDeniedError,
    RESOURCE_EXHAUSTED: ResourceExhaustedError,
    FAILED_PRECONDITION: FailedPreconditionError,
    ABORTED: AbortedError,
    OUT_OF_RANGE: OutOfRangeError,
    UNIMPLEMENTED: UnimplementedError,
    INTERNAL: InternalError,
    UNAVAILABLE: UnavailableError,
    DATA_LOSS: DataLossError,
    UNAUTHENTICATED: UnauthenticatedError,
}
_EXCEPTION_CLASS_TO_CODE = {cls: code for code, cls in CODE_TO_EXCEPTION_CLASS.items()}


def exception_type_from_error_code(error_code: int) -> type[OpError]:
    """Returns the OpError subclass for a status code.

    Raises:
      KeyError: for OK or a code TensorFlow does not define (as TF does).

    Example:
      >>> exception_type_from_error_code(5).__name__
      'NotFoundError'
    """
    return CODE_TO_EXCEPTION_CLASS[error_code]


def error_code_from_exception_type(cls: type) -> int:
    """Returns the status code of an OpError subclass (or of its nearest base).

    An unrelated class gives UNKNOWN with a warning (TF returns an UnknownError
    instance there; a code is what callers need).

    Example:
      >>> error_code_from_exception_type(NotFoundError)
      5
    """
    for base in getattr(cls, "__mro__", ()):
        if base in _EXCEPTION_CLASS_TO_CODE:
            return _EXCEPTION_CLASS_TO_CODE[base]
    warnings.warn("Unknown class exception: %r" % (cls,))
    return UNKNOWN
