"""tf.variable_creator_scope: `Variable(...)` routed through creator functions.

A strategy's scope enters one, so a Variable made in it may come back as
something else (ParameterServerStrategy's ShardedVariable) or placed apart.
Rule: scopes are per thread and per graph, as TF keeps them; a creator gets
the constructor's arguments by name and `next_creator` to call with them.
"""
from __future__ import annotations

import contextlib
import inspect
import threading

from nbcluster.framework.graph import get_default_graph

# Per thread, as TF's: (graph, creator) pairs, innermost last.
_creator_scopes = threading.local()


def _creators_of(graph) -> list:
    return [c for g, c in getattr(_creator_scopes, "stack", []) if g is graph]


@contextlib.contextmanager
def variable_creator_scope(variable_creator):
    """Routes `Variable(...)` in the default graph, on this thread, through
    `variable_creator(next_creator, **kwargs)`; it may call `next_creator(**kwargs)`
    (the next scope out, at last the plain constructor) any number of times.

    Example:
      >>> def doubled(next_creator, **kwargs):
      ...     return next_creator(**dict(kwargs, initial_value=kwargs["initial_value"] * 2))
      >>> with variable_creator_scope(doubled):
      ...     v = Variable(1.0)
    """
    stack = getattr(_creator_scopes, "stack", None)
    if stack is None:
        stack = _creator_scopes.stack = []
    entry = (get_default_graph(), variable_creator)
    stack.append(entry)
    try:
        yield
    finally:
        stack.remove(entry)


class CreatedThroughScopes(type):
    """The metaclass of Variable: a call goes through the creators in scope, the
    innermost first, each handed the next; the last is the constructor itself."""

    def __call__(cls, *args, **kwargs):
        creators = _creators_of(get_default_graph())
        if not creators:
            return super().__call__(*args, **kwargs)
        bound = inspect.signature(cls.__init__).bind(None, *args, **kwargs)
        bound.apply_defaults()
        named = {k: v for k, v in bound.arguments.items() if k not in ("self", "unused")}
        named.update(bound.arguments.get("unused") or {})

        def chain(i):
            if i < 0:
                return lambda **kw: super(CreatedThroughScopes, cls).__call__(**kw)
            return lambda **kw: creators[i](chain(i - 1), **kw)
        return chain(len(creators) - 1)(**named)
