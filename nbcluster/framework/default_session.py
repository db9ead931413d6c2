"""The stack of default sessions that `Tensor.eval` and `Operation.run` use."""
from __future__ import annotations

import contextlib
import threading

_local = threading.local()


def _stack() -> list:
    if not hasattr(_local, "stack"):
        _local.stack = []
    return _local.stack


def get_default_session():
    stack = _stack()
    return stack[-1] if stack else None


@contextlib.contextmanager
def as_default(session):
    _stack().append(session)
    try:
        yield session
    finally:
        _stack().remove(session)


def push(session) -> None:
    _stack().append(session)


def remove(session) -> None:
    stack = _stack()
    if session in stack:
        stack.remove(session)


def resolve(session, graph):
    """`session` or the default one; checks it runs `graph`."""
    session = session or get_default_session()
    if session is None:
        raise ValueError("Cannot evaluate tensor using `eval()`: No default session is "
                         "registered. Use `with sess.as_default()` or pass an explicit "
                         "session to `eval(session=sess)`")
    if session.graph is not graph:
        raise ValueError("Cannot use the given session to evaluate tensor: the tensor's "
                         "graph is different from the session's graph.")
    return session
