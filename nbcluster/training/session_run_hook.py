"""SessionRunHook and the values passed to it around each MonitoredSession.run.

Rule: a hook sees one call of `MonitoredSession.run` as before_run (it may ask
for more fetches and feeds) then after_run (it gets exactly what it asked
for); its extra fetches ride in the same underlying `Session.run` as the
caller's, so a hook never costs a step of its own unless it runs one itself.
"""
from __future__ import annotations

from typing import Any, NamedTuple, Optional


class SessionRunArgs(NamedTuple):
    """What a hook adds to the next run (tf.train.SessionRunArgs).

    Args:
      fetches: anything `Session.run` accepts (a tensor, an op, a name, or
        lists / tuples / dicts of those); its results come back to the hook's
        after_run as `run_values.results`, in the same structure.
      feed_dict: extra {tensor: value} feeds; a tensor fed by two hooks, or by
        a hook and the caller, is a RuntimeError.
      options: a RunOptions merged with the caller's and the other hooks'
        (the highest trace level and timeout win).
    Example:
      >>> SessionRunArgs(fetches=loss, feed_dict={keep_prob: 1.0})
    """

    fetches: Any
    feed_dict: Optional[dict] = None
    options: Any = None


class SessionRunValues(NamedTuple):
    """What a hook gets back (tf.train.SessionRunValues).

    Args:
      results: the values of the hook's own SessionRunArgs.fetches (None if
        it asked for nothing).
      options: the RunOptions the merged run used.
      run_metadata: the RunMetadata the run filled.
    """

    results: Any
    options: Any
    run_metadata: Any


class SessionRunContext:
    """The caller's run as seen by a hook (tf.train.SessionRunContext).

    Args:
      original_args: the caller's SessionRunArgs (fetches, feed_dict, options).
      session: the underlying Session; a hook may run steps of its own with it.
    Example:
      >>> def after_run(self, run_context, run_values):
      ...     if run_values.results > 100:
      ...         run_context.request_stop()
    """

    def __init__(self, original_args: SessionRunArgs, session) -> None:
        self._original_args = original_args
        self._session = session
        self._stop_requested = False

    @property
    def original_args(self) -> SessionRunArgs:
        return self._original_args

    @property
    def session(self):
        return self._session

    @property
    def stop_requested(self) -> bool:
        """Whether a hook asked to stop during this run."""
        return self._stop_requested

    def request_stop(self) -> None:
        """Asks the MonitoredSession to stop: its should_stop() becomes True after
        this run (the run itself completes)."""
        self._stop_requested = True


class SessionRunHook:
    """Extends a MonitoredSession: subclass it and override what you need.

    The order of calls for one MonitoredSession:
      begin() once, before the graph is finalized (the last chance to add ops);
      after_create_session(session, coord) each time a session is created,
        the first and after each recovery;
      before_run(run_context) -> SessionRunArgs or None, then the run, then
        after_run(run_context, run_values), for every MonitoredSession.run;
      end(session) once, when the MonitoredSession closes without an error.
    Example:
      >>> class CountSteps(SessionRunHook):
      ...     def begin(self):
      ...         self.steps = 0
      ...     def after_run(self, run_context, run_values):
      ...         self.steps += 1
    """

    def begin(self) -> None:
        """Called once before the graph is finalized."""

    def after_create_session(self, session, coord) -> None:
        """Called when a session has been created and initialized (or restored).

        Args:
          session: the new Session.
          coord: the MonitoredSession's Coordinator (request_stop / should_stop).
        """

    def before_run(self, run_context: SessionRunContext) -> Optional[SessionRunArgs]:
        """Called before each run.

        Returns: a SessionRunArgs to add to the run, or None.
        """
        return None

    def after_run(self, run_context: SessionRunContext,
                  run_values: SessionRunValues) -> None:
        """Called after each run that succeeded, with this hook's results."""

    def end(self, session) -> None:
        """Called once when the MonitoredSession closes without an error."""


def check_hooks(hooks) -> list:
    """`hooks` as a list, refusing anything that is not a SessionRunHook.

    Raises:
      TypeError: an item is not a SessionRunHook (named), or hooks is not iterable.
    """
    if hooks is None:
        return []
    if isinstance(hooks, SessionRunHook):
        raise TypeError(f"hooks must be a list of SessionRunHook, got the single hook "
                        f"{hooks!r}; pass [{type(hooks).__name__}(...)]")
    try:
        hooks = list(hooks)
    except TypeError:
        raise TypeError(f"hooks must be a list of SessionRunHook, got {hooks!r}") from None
    bad = [h for h in hooks if not isinstance(h, SessionRunHook)]
    if bad:
        raise TypeError(f"hooks must be SessionRunHook instances; these are not: {bad!r}")
    return hooks
