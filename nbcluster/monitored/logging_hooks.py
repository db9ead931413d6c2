"""Hooks that report progress through `logging`: LoggingTensorHook and StepCounterHook."""
from __future__ import annotations

import logging
from typing import Callable, Optional

import numpy as np

from nbcluster.framework.graph import get_default_graph
from nbcluster.monitored.stop_hooks import global_step_or_raise
from nbcluster.monitored.timer import SecondOrStepTimer
from nbcluster.training.session_run_hook import SessionRunArgs, SessionRunHook

logger = logging.getLogger(__name__)


def _tagged(tensors) -> dict:
    """{tag: tensor or name}: a dict as given, else each item tagged by its name."""
    if isinstance(tensors, dict):
        return dict(tensors)
    if isinstance(tensors, (str, bytes)) or not hasattr(tensors, "__iter__"):
        raise TypeError(f"tensors must be a dict {{tag: tensor}} or a list of tensors or "
                        f"names, got {tensors!r}")
    return {item if isinstance(item, str) else item.name: item for item in tensors}


class LoggingTensorHook(SessionRunHook):
    """Logs the values of tensors every N local steps, every N seconds, and/or at the end.

    Values go to `logging.getLogger("nbcluster.monitored.logging_hooks")` at
    INFO: "tag1 = value1, tag2 = value2 (0.123 sec)", or formatter({tag: value}).

    Args:
      tensors: {tag: tensor or name}, or a list of tensors or names (tagged by name).
      every_n_iter: log every this many runs of this MonitoredSession.
      every_n_secs: log when this many seconds have passed since the last log.
      at_end: also log once when the session ends.
      formatter: a function {tag: value} -> str.
    Raises:
      ValueError: neither at_end nor exactly one of every_n_iter and
        every_n_secs, or a non-positive interval.
      TypeError: `tensors` is not a dict or a list.
    Example:
      >>> hooks = [LoggingTensorHook({"loss": model.loss}, every_n_iter=100)]
    """

    def __init__(self, tensors, every_n_iter: Optional[int] = None,
                 every_n_secs: Optional[float] = None, at_end: bool = False,
                 formatter: Optional[Callable[[dict], str]] = None) -> None:
        only_at_end = at_end and every_n_iter is None and every_n_secs is None
        if not only_at_end and (every_n_iter is None) == (every_n_secs is None):
            raise ValueError(f"either at_end and/or exactly one of every_n_iter and "
                             f"every_n_secs must be provided, got every_n_iter="
                             f"{every_n_iter!r}, every_n_secs={every_n_secs!r}")
        self._tensors = _tagged(tensors)
        self._timer = None if only_at_end else SecondOrStepTimer(every_n_secs, every_n_iter)
        self._at_end = at_end
        self._formatter = formatter

    def begin(self) -> None:
        graph = get_default_graph()
        self._fetches = {tag: graph.as_graph_element(t, allow_operation=False)
                         for tag, t in self._tensors.items()}
        self._iteration = 0
        if self._timer is not None:
            self._timer.reset()

    def before_run(self, run_context) -> Optional[SessionRunArgs]:
        self._due = self._timer is not None and \
            self._timer.should_trigger_for_step(self._iteration)
        return SessionRunArgs(self._fetches) if self._due else None

    def after_run(self, run_context, run_values) -> None:
        if self._due:
            self._log(run_values.results)
        self._iteration += 1

    def end(self, session) -> None:
        if self._at_end:
            self._log(session.run(self._fetches))

    def _log(self, values: dict) -> None:
        if self._formatter is not None:
            logger.info(self._formatter(values))
            return
        text = ", ".join(f"{tag} = {_printed(v)}" for tag, v in values.items())
        if self._timer is not None:
            elapsed, _ = self._timer.update_last_triggered_step(self._iteration)
            if elapsed is not None:
                text += f" ({elapsed:.3f} sec)"
        logger.info(text)


def _printed(value) -> str:
    with np.printoptions(suppress=True, precision=6):
        return str(np.asarray(value) if not isinstance(value, (bytes, str)) else value)


class StepCounterHook(SessionRunHook):
    """Logs the global step's rate, "global_step/sec: 12.3", every N steps or seconds.

    Args:
      every_n_steps: log every this many global steps (default 100).
      every_n_secs: log every this many seconds instead.
      output_dir: also write the rate as a "<global step>/sec" summary to the
        FileWriterCache writer of this directory (as TF does).
      summary_writer: a FileWriter to write it to instead.
    Raises:
      ValueError: both intervals given, or a non-positive one.
    Example:
      >>> hooks = [StepCounterHook(every_n_steps=50)]
    """

    def __init__(self, every_n_steps: Optional[int] = 100, every_n_secs: Optional[float] = None,
                 output_dir: Optional[str] = None, summary_writer=None) -> None:
        if every_n_steps is not None and every_n_secs is not None:
            raise ValueError(f"exactly one of every_n_steps and every_n_secs should be "
                             f"provided, got {every_n_steps!r} and {every_n_secs!r}")
        self._timer = SecondOrStepTimer(every_n_secs, every_n_steps)
        self._output_dir, self._summary_writer = output_dir, summary_writer
        self.last_rate: Optional[float] = None

    def begin(self) -> None:
        if self._summary_writer is None and self._output_dir:
            from nbcluster.summary import FileWriterCache
            self._summary_writer = FileWriterCache.get(self._output_dir)
        self._global_step = global_step_or_raise("StepCounterHook")
        self._tag = f"{self._global_step.op.name}/sec"
        self._timer.reset()

    def before_run(self, run_context) -> SessionRunArgs:
        return SessionRunArgs(self._global_step)

    def after_run(self, run_context, run_values) -> None:
        step = int(run_values.results)
        if self._timer.should_trigger_for_step(step):
            elapsed, steps = self._timer.update_last_triggered_step(step)
            if elapsed:
                self.last_rate = steps / elapsed
                logger.info("%s: %g", self._tag, self.last_rate)
                if self._summary_writer is not None:
                    from nbcluster.proto.summary_pb2 import Summary
                    self._summary_writer.add_summary(Summary(value=[Summary.Value(
                        tag=self._tag, simple_value=self.last_rate)]), step)
