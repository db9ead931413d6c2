"""SummarySaverHook: runs the summary op with the training step every N steps or seconds.

Rule: the summary is fetched in the same run as the training op (no extra
step), and written at the global step read after that run, to the
FileWriterCache writer of `output_dir`, as TF's hook does.
"""
from __future__ import annotations

from typing import Optional

from nbcluster.monitored.stop_hooks import global_step_or_raise
from nbcluster.monitored.timer import SecondOrStepTimer
from nbcluster.training.session_run_hook import SessionRunArgs, SessionRunHook


class SummarySaverHook(SessionRunHook):
    """Saves summaries every `save_steps` global steps or `save_secs` seconds.

    Args:
      save_steps, save_secs: the interval (exactly one).
      output_dir: where the event file goes (FileWriterCache's writer for it).
      summary_writer: a FileWriter to use instead.
      scaffold: take the summary op from this Scaffold (its default: merge_all()).
      summary_op: a summary tensor, or a list of them (exactly one of scaffold
        and summary_op).
    Raises:
      ValueError: both or neither of scaffold and summary_op, or not exactly
        one interval.
      RuntimeError (at begin): the graph has no global step.
    Example:
      >>> hooks = [SummarySaverHook(save_steps=100, output_dir=logdir,
      ...                           summary_op=tf.summary.merge_all())]
    """

    def __init__(self, save_steps: Optional[int] = None, save_secs: Optional[float] = None,
                 output_dir: Optional[str] = None, summary_writer=None, scaffold=None,
                 summary_op=None) -> None:
        if (scaffold is None) == (summary_op is None):
            raise ValueError(f"Exactly one of scaffold or summary_op should be passed, got "
                             f"{scaffold!r} and {summary_op!r}.")
        self._timer = SecondOrStepTimer(every_secs=save_secs, every_steps=save_steps)
        self._output_dir, self._summary_writer = output_dir, summary_writer
        self._scaffold, self._summary_op = scaffold, summary_op

    def begin(self) -> None:
        if self._summary_writer is None and self._output_dir:
            from nbcluster.summary import FileWriterCache
            self._summary_writer = FileWriterCache.get(self._output_dir)
        self._global_step = global_step_or_raise("SummarySaverHook")
        self._next_step = None
        self._timer.reset()

    def _summary_ops(self) -> list:
        op = self._scaffold.summary_op if self._scaffold is not None else self._summary_op
        if op is None:
            return []
        return list(op) if isinstance(op, (list, tuple)) else [op]

    def before_run(self, run_context) -> SessionRunArgs:
        self._request_summary = (self._next_step is None
                                 or self._timer.should_trigger_for_step(self._next_step))
        requests = {"global_step": self._global_step}
        if self._request_summary and self._summary_ops():
            requests["summary"] = self._summary_ops()
        return SessionRunArgs(requests)

    def after_run(self, run_context, run_values) -> None:
        if self._summary_writer is None:
            return
        step = int(run_values.results["global_step"]) + 1
        if self._next_step is None or self._request_summary:
            step = int(run_context.session.run(self._global_step))
        if self._next_step is None:
            from nbcluster.summary import SessionLog
            self._summary_writer.add_session_log(SessionLog(status=SessionLog.START), step)
        if self._request_summary:
            self._timer.update_last_triggered_step(step)
            for summary in run_values.results.get("summary", []):
                self._summary_writer.add_summary(summary, step)
        self._next_step = step + 1

    def end(self, session) -> None:
        if self._summary_writer is not None:
            self._summary_writer.flush()
