"""One MonitoredSession.run: the caller's and the hooks' fetches and feeds in one Session.run.

Rule: exactly one underlying `Session.run` per call; each hook gets back the
results of its own SessionRunArgs, in the structure it asked for.
"""
from __future__ import annotations

from typing import Optional

from nbcluster.proto import config_pb2
from nbcluster.training.session_run_hook import SessionRunArgs, SessionRunContext, SessionRunValues


def merge_feeds(caller: Optional[dict], hook_args: list) -> dict:
    """The caller's feeds plus every hook's.

    Raises:
      RuntimeError: a tensor is fed twice (by two hooks, or a hook and the
        caller); the message names it.
    """
    merged = dict(caller or {})
    for args in hook_args:
        for key, value in (args.feed_dict or {}).items():
            if key in merged:
                raise RuntimeError(f"Same tensor is fed by a SessionRunHook and user, or by "
                                   f"two hooks: {getattr(key, 'name', key)!r}")
            merged[key] = value
    return merged


def merge_options(caller, hook_args: list):
    """One RunOptions: the highest trace level and timeout, any request for
    partition graphs; the caller's own when no hook asked for options."""
    requested = [a.options for a in hook_args if a.options is not None]
    if not requested:
        return caller
    merged = config_pb2.RunOptions()
    if caller is not None:
        merged.CopyFrom(caller)
    for options in requested:
        merged.trace_level = max(merged.trace_level, options.trace_level)
        merged.timeout_in_ms = max(merged.timeout_in_ms, options.timeout_in_ms)
        merged.output_partition_graphs |= options.output_partition_graphs
    return merged


def hooked_run(session, hooks: list, fetches, feed_dict=None, options=None,
               run_metadata=None) -> tuple:
    """Runs the caller's fetches with the hooks around them.

    Args:
      session: the underlying Session.
      hooks: the SessionRunHooks, called in order.
      fetches, feed_dict, options, run_metadata: the caller's, as Session.run takes them.
    Returns: (the caller's results, whether a hook requested a stop).
    Raises:
      TypeError: a hook's before_run returned something other than
        SessionRunArgs or None (the hook is named).
      RuntimeError: a tensor fed twice.
    """
    context = SessionRunContext(SessionRunArgs(fetches, feed_dict, options), session)
    hook_args = []
    for hook in hooks:
        args = hook.before_run(context)
        if args is not None and not isinstance(args, SessionRunArgs):
            raise TypeError(f"{hook!r}.before_run returned {args!r}; it must return a "
                            f"SessionRunArgs or None")
        hook_args.append(args if args is not None else SessionRunArgs(None))
    asked = [i for i, a in enumerate(hook_args) if a.fetches is not None]
    merged_options = merge_options(options, hook_args)
    metadata = run_metadata if run_metadata is not None else config_pb2.RunMetadata()
    results = session.run([fetches] + [hook_args[i].fetches for i in asked],
                          feed_dict=merge_feeds(feed_dict, hook_args),
                          options=merged_options, run_metadata=metadata)
    per_hook = dict(zip(asked, results[1:]))
    for i, hook in enumerate(hooks):
        hook.after_run(context, SessionRunValues(per_hook.get(i), merged_options, metadata))
    return results[0], context.stop_requested
