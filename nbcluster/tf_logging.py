"""tf.logging: TF1's logging calls (`tf.logging.set_verbosity(tf.logging.INFO)`,
`tf.logging.info(...)`) on Python's `logging`, under the logger "tensorflow" that TF
programs and their log configuration already name.

Rule: nothing is printed until a program logs; the handler (stderr, TF's
"LEVEL:tensorflow:message" shape) is added once, and only when the logger has none.
"""
from __future__ import annotations

import logging as _logging
import sys as _sys
import threading as _threading

DEBUG, INFO, WARN, ERROR, FATAL = (_logging.DEBUG, _logging.INFO, _logging.WARN,
                                   _logging.ERROR, _logging.FATAL)
_lock = _threading.Lock()
_counts: dict = {}


def get_logger() -> _logging.Logger:
    """The "tensorflow" logger, with a stderr handler at WARN unless one was configured."""
    logger = _logging.getLogger("tensorflow")
    with _lock:
        if not logger.handlers and not getattr(logger, "_nbcluster_ready", False):
            handler = _logging.StreamHandler(_sys.stderr)
            handler.setFormatter(_logging.Formatter("%(levelname)s:%(name)s:%(message)s"))
            logger.addHandler(handler)
            logger.propagate = False
            if logger.level == _logging.NOTSET:
                logger.setLevel(WARN)
            logger._nbcluster_ready = True
    return logger


def set_verbosity(v: int) -> None:
    get_logger().setLevel(v)


def get_verbosity() -> int:
    return get_logger().getEffectiveLevel()


def log(level: int, msg, *args, **kwargs) -> None:
    get_logger().log(level, msg, *args, **kwargs)


def debug(msg, *args, **kwargs) -> None:
    get_logger().debug(msg, *args, **kwargs)


def info(msg, *args, **kwargs) -> None:
    get_logger().info(msg, *args, **kwargs)


def warning(msg, *args, **kwargs) -> None:
    get_logger().warning(msg, *args, **kwargs)


warn = warning


def error(msg, *args, **kwargs) -> None:
    get_logger().error(msg, *args, **kwargs)


def fatal(msg, *args, **kwargs) -> None:
    get_logger().fatal(msg, *args, **kwargs)


def vlog(level: int, msg, *args, **kwargs) -> None:
    get_logger().log(level, msg, *args, **kwargs)


def flush() -> None:
    for handler in get_logger().handlers:
        handler.flush()


def _nth(key, n: int) -> int:
    with _lock:
        count = _counts.get(key, 0)
        _counts[key] = count + 1
    return count


def _caller_key() -> tuple:
    frame = _sys._getframe(2)
    return frame.f_code.co_filename, frame.f_lineno


def log_every_n(level: int, msg, n: int, *args) -> None:
    """Logs on the 1st, (n+1)th, (2n+1)th ... call from the same line."""
    if _nth(_caller_key(), n) % n == 0:
        log(level, msg, *args)


def log_first_n(level: int, msg, n: int, *args) -> None:
    """Logs the first n calls from the same line."""
    if _nth(_caller_key(), n) < n:
        log(level, msg, *args)


def log_if(level: int, msg, condition, *args) -> None:
    if condition:
        log(level, msg, *args)


__all__ = ["DEBUG", "ERROR", "FATAL", "INFO", "WARN", "debug", "error", "fatal", "flush",
           "get_logger", "get_verbosity", "info", "log", "log_every_n", "log_first_n",
           "log_if", "set_verbosity", "vlog", "warn", "warning"]
