"""`tf.app`: `run(main, argv)` parses the flags with absl and calls `main`, as TF1's does.

This module imports absl-py: `nbcluster` loads it on first use of `tf.app`.
"""
from __future__ import annotations

import sys
from typing import Callable, Optional

from absl import app as _absl_app

from nbcluster import flags

__all__ = ["flags", "run"]


def _parse_flags_tolerate_undef(argv: list) -> list:
    # TF1's parser: known flags only, so main() gets the rest of argv. A bad
    # value ends the program as absl's own parser does (message, exit 1), not
    # with a traceback.
    try:
        return flags.FLAGS(sys.argv if argv is None else argv, known_only=True)
    except flags.Error as error:
        sys.stderr.write(f"FATAL Flags parsing error: {error}\n")
        sys.stderr.write("Pass --helpshort or --helpfull to see help on flags.\n")
        sys.exit(1)


def run(main: Optional[Callable] = None, argv: Optional[list] = None):
    """Parses `argv` (default `sys.argv`) into tf.flags.FLAGS, then exits with `main(argv)`.

    argv[0] is the program name. `--help` / `--helpfull` print the defined flags
    and exit; arguments that are not defined flags are left in the argv `main`
    gets.

    Args:
      main: `main(argv)`; default the `main` function of the `__main__` module.
      argv: the command line; default `sys.argv`.
    Raises:
      SystemExit: always, with main's return value (absl's app.run); a flag
        value of the wrong type exits with status 1 after printing absl's
        "FATAL Flags parsing error: flag --steps=abc: ..." message.
    Example:
      >>> tf.app.flags.DEFINE_integer("steps", 100, "training steps")
      >>> def main(argv): print(tf.app.flags.FLAGS.steps, argv[1:])
      >>> tf.app.run(main)            # python train.py --steps=5 extra
      5 ['extra']
    """
    main = main or sys.modules["__main__"].main
    _absl_app.run(main=main, argv=argv, flags_parser=_parse_flags_tolerate_undef)
