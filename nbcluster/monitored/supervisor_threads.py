"""The Supervisor's background services: summaries, steps/sec and checkpoints on a timer.

Rule: each is a LooperThread (TF's tf.train.LooperThread): it runs once at
start, then every `timer_interval_secs`, until the coordinator's stop; an
error in it is handed to the coordinator (which stops training and re-raises
it from Supervisor.stop), so no service dies quietly or outlives the stop.
"""
from __future__ import annotations

import logging
import threading
import time
from typing import Callable, Optional

from nbcluster.training.training_util import global_step as read_global_step

logger = logging.getLogger(__name__)


class LooperThread(threading.Thread):
    """Runs `run_loop()` (or `target(*args, **kwargs)`) every `timer_interval_secs` until a stop.

    Args:
      coord: the Coordinator whose stop ends the loop (and that gets its errors).
      timer_interval_secs: seconds between calls; None: back to back.
      target, args, kwargs: what to call, instead of overriding run_loop().
    Example:
      >>> LooperThread.loop(coord, 60, lambda: print("still training"))
    """

    def __init__(self, coord, timer_interval_secs: Optional[float],
                 target: Optional[Callable] = None, args=None, kwargs=None) -> None:
        if not isinstance(timer_interval_secs, (int, float, type(None))):
            raise ValueError(f"timer_interval_secs must be a number or None, got "
                             f"{timer_interval_secs!r}")
        super().__init__(daemon=True, name=type(self).__name__)
        self._coord, self._interval = coord, timer_interval_secs
        self._target, self._args, self._kwargs = target, args or (), kwargs or {}
        coord.register_thread(self)

    @staticmethod
    def loop(coord, timer_interval_secs, target, args=None, kwargs=None) -> "LooperThread":
        """Starts a LooperThread calling `target` and returns it."""
        looper = LooperThread(coord, timer_interval_secs, target=target, args=args,
                              kwargs=kwargs)
        looper.start()
        return looper

    def run(self) -> None:
        with self._coord.stop_on_exception():
            self.start_loop()
            if self._interval is None:
                while not self._coord.should_stop():
                    self.run_loop()
            else:
                next_time = time.monotonic()
                while not self._coord.wait_for_stop(max(0.0, next_time - time.monotonic())):
                    next_time += self._interval
                    self.run_loop()
            self.stop_loop()

    def start_loop(self) -> None:
        """Called once when the thread starts."""

    def stop_loop(self) -> None:
        """Called once when the loop ends."""

    def run_loop(self) -> None:
        if self._target is not None:
            self._target(*self._args, **self._kwargs)


class SVSummaryThread(LooperThread):
    """Runs the Supervisor's summary_op every save_summaries_secs and writes what it returns."""

    def __init__(self, sv, sess) -> None:
        super().__init__(sv.coord, sv.save_summaries_secs)
        self._sv, self._sess = sv, sess

    def run_loop(self) -> None:
        if self._sv.global_step is not None:
            summary, step = self._sess.run([self._sv.summary_op, self._sv.global_step])
        else:
            summary, step = self._sess.run(self._sv.summary_op), None
        if self._sv.summary_writer is not None:
            logger.info("Recording summary at step %s.", step)
            self._sv.summary_writer.add_summary(summary, step)


class SVStepCounterThread(LooperThread):
    """Writes `<global step name>/sec`, the global steps per second, every save_summaries_secs."""

    def __init__(self, sv, sess, step_counter=None) -> None:
        super().__init__(sv.coord, sv.save_summaries_secs)
        self._sv, self._sess = sv, sess
        self._step_counter = step_counter if step_counter is not None else sv.global_step
        self._tag = f"{self._step_counter.op.name}/sec"

    def start_loop(self) -> None:
        self._last_time = time.monotonic()
        self._last_step = read_global_step(self._sess, self._step_counter)

    def run_loop(self) -> None:
        now = time.monotonic()
        step = read_global_step(self._sess, self._step_counter)
        elapsed, added = now - self._last_time, step - self._last_step
        self._last_time, self._last_step = now, step
        if elapsed <= 0 or added <= 0:  # nothing to rate yet
            return
        from nbcluster.proto.summary_pb2 import Summary
        rate = added / elapsed
        summary = Summary(value=[Summary.Value(tag=self._tag, simple_value=rate)])
        if self._sv.summary_writer is not None:
            self._sv.summary_writer.add_summary(summary, step)
        logger.info("%s: %g", self._tag, rate)


class SVTimerCheckpointThread(LooperThread):
    """Saves a checkpoint to the Supervisor's save_path every save_model_secs."""

    def __init__(self, sv, sess) -> None:
        super().__init__(sv.coord, sv.save_model_secs)
        self._sv, self._sess = sv, sess

    def run_loop(self) -> None:
        logger.info("Saving checkpoint to path %s", self._sv.save_path)
        self._sv.saver.save(self._sess, self._sv.save_path, global_step=self._sv.global_step)
        if self._sv.summary_writer is not None and self._sv.global_step is not None:
            from nbcluster.summary import SessionLog  # tensorboard's, loaded with the writer
            step = read_global_step(self._sess, self._sv.global_step)
            self._sv.summary_writer.add_session_log(
                SessionLog(status=SessionLog.CHECKPOINT, checkpoint_path=self._sv.save_path),
                step)
