"""TensorBoard's file layer without TensorFlow.

Rule: tensorboard's event writer and loader do their file work through
`tensorboard.compat.tf`, which imports TensorFlow when it is installed (seconds
of a task's start, and TF's thread pools in every process that writes a
summary) unless the module `tensorboard.compat.notf` exists; tensorboard's own
`no_tensorflow` build target is that module. nbcluster needs only the stub's
gfile, so it names that module before the first use, unless TensorFlow is
already loaded (then it costs nothing and the user's process keeps it).
"""
from __future__ import annotations

import sys
import types

_MARKER = "tensorboard.compat.notf"


def without_tensorflow() -> None:
    """Makes tensorboard's file layer its TensorFlow-free stub in this process."""
    if "tensorflow" not in sys.modules and "tensorboard.compat.tf" not in sys.modules:
        sys.modules.setdefault(_MARKER, types.ModuleType(_MARKER))
