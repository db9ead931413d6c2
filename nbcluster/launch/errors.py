"""LaunchError: a cluster's task could not be started (its log tail is quoted)."""
from __future__ import annotations


class LaunchError(RuntimeError):
    """A task of a cluster did not start, or a host could not be reached.

    The message names the task or host and quotes the end of its log, so it
    reads on its own in a notebook cell's output.
    """
