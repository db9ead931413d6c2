"""Confines the files a task's checkpoint kernels touch to one allowed root.

A server runs the SaveV2 / RestoreV2 / MergeV2Checkpoints a client sends it;
without a root any client could write, move or read files at any path the
server's user can (another user's checkpoint, a shell's start-up file). A
task's CPU device carries its root (`Device.file_root`): every path is
resolved (`..` and symlinks, `os.path.realpath`) and must lie inside it,
else PermissionDeniedError naming the path. A device with no root (the
in-process `Session("")`, which runs in the user's own process, as TF's does)
writes wherever its user asks.
"""
from __future__ import annotations

import os
from typing import Optional

from nbcluster import errors


def resolved_root(directory: str) -> str:
    """`directory` as an absolute path with every symlink resolved."""
    return os.path.realpath(os.path.abspath(os.fspath(directory)))


def confine(path: str, root: Optional[str]) -> str:
    """`path` resolved, if it lies inside `root` (or `root` is None).

    The resolved path is the one to open: a symlink swapped in after the
    check cannot redirect an open that no longer follows it.

    Raises:
      PermissionDeniedError: the resolved path is outside `root`.
    """
    if root is None:
        return path
    resolved = os.path.realpath(os.path.abspath(path))
    if resolved != root and os.path.commonpath([resolved, root]) != root:
        shown = path if resolved == os.path.abspath(path) else f"{path} (resolved: {resolved})"
        raise errors.PermissionDeniedError(
            None, None, f"Checkpoint path {shown} is outside this task's checkpoint "
                        f"directory {root} (start the server with --checkpoint-dir, or "
                        f"NBCLUSTER_CHECKPOINT_DIR, to allow another)")
    return resolved
