"""`tf.flags` / `tf.app.flags`: absl-py's flags, with TF1's FLAGS that parses on first read.

Rule: every flag type, parser and error is absl's (TF 1.x itself wraps absl);
the only addition is TF1's convenience that reading `FLAGS.x` before
`tf.app.run` parses `sys.argv` first. That implicit parse keeps unknown
arguments (a Jupyter kernel's `-f kernel.json`) instead of failing on them.
This module imports absl: `nbcluster` loads it on first use of `tf.flags`.
"""
from __future__ import annotations

import sys

from absl import flags as _absl_flags
from absl.flags import *  # noqa: F401,F403 - tf.flags is absl.flags' public names

__all__ = [name for name in dir(_absl_flags) if not name.startswith("_")]


class _FlagValuesWrapper:
    """absl's FlagValues, parsing `sys.argv` (known flags only) when a flag is first read.

    Example:
      >>> tf.flags.DEFINE_integer("steps", 100, "training steps")
      >>> FLAGS = tf.flags.FLAGS
      >>> FLAGS.steps      # parses sys.argv now unless tf.app.run already did
      100
    """

    def __init__(self, flag_values) -> None:
        self.__dict__["_wrapped"] = flag_values

    def __getattr__(self, name: str):
        wrapped = self.__dict__["_wrapped"]
        if not wrapped.is_parsed() and not name.startswith("__"):
            wrapped(sys.argv, known_only=True)
        return getattr(wrapped, name)

    def __setattr__(self, name: str, value) -> None:
        setattr(self.__dict__["_wrapped"], name, value)

    def __delattr__(self, name: str) -> None:
        delattr(self.__dict__["_wrapped"], name)

    def __dir__(self):
        return dir(self.__dict__["_wrapped"])

    def __getitem__(self, name: str):
        return self.__dict__["_wrapped"][name]

    def __setitem__(self, name: str, flag) -> None:
        self.__dict__["_wrapped"][name] = flag

    def __len__(self) -> int:
        return len(self.__dict__["_wrapped"])

    def __iter__(self):
        return iter(self.__dict__["_wrapped"])

    def __contains__(self, name: str) -> bool:
        return name in self.__dict__["_wrapped"]

    def __call__(self, *args, **kwargs):
        return self.__dict__["_wrapped"](*args, **kwargs)

    def __repr__(self) -> str:
        return repr(self.__dict__["_wrapped"])


FLAGS = _FlagValuesWrapper(_absl_flags.FLAGS)
