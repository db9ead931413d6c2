"""Which directory a served task's checkpoint kernels may touch.

In order: the Server's `checkpoint_dir=` (`--checkpoint-dir` on the command
line), then NBCLUSTER_CHECKPOINT_DIR, then the process's working directory
when the server starts. Save, restore and merge paths must resolve inside it
(`kernels/file_root.py`); TF's servers have no such bound.
"""
from __future__ import annotations

import os
from typing import Optional

from nbcluster import errors
from nbcluster.kernels.file_root import resolved_root

ENV = "NBCLUSTER_CHECKPOINT_DIR"


def checkpoint_root(explicit=None, environ: Optional[dict] = None) -> str:
    """The resolved allowed root for a server's checkpoint files.

    Raises:
      InvalidArgumentError: the chosen directory exists but is not a directory.
    """
    environ = os.environ if environ is None else environ
    chosen = explicit if explicit is not None else (environ.get(ENV) or os.getcwd())
    if not isinstance(chosen, (str, os.PathLike)) or not os.fspath(chosen):
        raise errors.InvalidArgumentError(
            None, None, f"checkpoint_dir must be a directory path, not {chosen!r}")
    root = resolved_root(chosen)
    if os.path.exists(root) and not os.path.isdir(root):
        raise errors.InvalidArgumentError(
            None, None, f"checkpoint_dir {chosen} is not a directory")
    return root
