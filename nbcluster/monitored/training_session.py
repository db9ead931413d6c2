"""MonitoredTrainingSession: TF1's distributed training loop (chief or worker, hooks, saving)."""
from __future__ import annotations

from typing import Optional

from nbcluster.monitored.checkpoint_hook import CheckpointSaverHook
from nbcluster.monitored.logging_hooks import StepCounterHook
from nbcluster.monitored.monitored_session import MonitoredSession
from nbcluster.monitored.scaffold import Scaffold
from nbcluster.monitored.session_creators import ChiefSessionCreator, WorkerSessionCreator
from nbcluster.monitored.summary_hook import SummarySaverHook
from nbcluster.training.session_run_hook import check_hooks
from nbcluster.training.training_util import get_global_step


class _UseDefault:
    def __repr__(self) -> str:
        return "USE_DEFAULT"


USE_DEFAULT = _UseDefault()  # tells "not given" from an explicit None (which disables)


def _checkpoint_intervals(secs, steps) -> tuple:
    """TF's rule: neither given -> every 600 s; one given -> only that one."""
    if secs is USE_DEFAULT and steps is USE_DEFAULT:
        return 600, None
    return (None if secs is USE_DEFAULT else secs), (None if steps is USE_DEFAULT else steps)


def _summary_intervals(steps, secs) -> tuple:
    """TF's rule: neither given -> every 100 steps; one given -> only that one."""
    if steps is USE_DEFAULT and secs is USE_DEFAULT:
        return 100, None
    return (None if steps is USE_DEFAULT else steps), (None if secs is USE_DEFAULT else secs)


def MonitoredTrainingSession(master: str = "", is_chief: bool = True,  # noqa: N802 - TF's name
                             checkpoint_dir: Optional[str] = None,
                             scaffold: Optional[Scaffold] = None, hooks=None,
                             chief_only_hooks=None, save_checkpoint_secs=USE_DEFAULT,
                             save_summaries_steps=USE_DEFAULT, save_summaries_secs=USE_DEFAULT,
                             config=None, stop_grace_period_secs: float = 120,
                             log_step_count_steps: Optional[int] = 100,
                             max_wait_secs: float = 7200, save_checkpoint_steps=USE_DEFAULT,
                             summary_dir: Optional[str] = None) -> MonitoredSession:
    """A MonitoredSession set up for (distributed) training, as tf.train's.

    The chief restores the latest checkpoint in `checkpoint_dir` (else runs the
    initializers) and, with a checkpoint_dir, saves checkpoints through a
    CheckpointSaverHook; it also logs global_step/sec every
    `log_step_count_steps` steps when the graph has a global step. Other
    workers wait (up to `max_wait_secs`) for the chief to make the model
    ready. A run that fails with AbortedError or UnavailableError (a task
    restarted) makes a new session this same way and is tried again.

    The chief also writes summaries to `summary_dir` (default checkpoint_dir):
    the scaffold's summary_op (default tf.summary.merge_all()) every
    `save_summaries_steps` steps (100 when neither interval is given) through
    a SummarySaverHook, and global_step/sec with the step counter.

    Args:
      master: the target, "" (in process) or "grpc://host:port" (server.target).
      is_chief: whether this worker initializes, restores and saves the model.
      checkpoint_dir: where checkpoints are restored from and saved to.
      scaffold: a Scaffold (default: one with every default).
      hooks: SessionRunHooks for every worker.
      chief_only_hooks: SessionRunHooks only the chief runs.
      save_checkpoint_secs: seconds between checkpoints (600 when neither this
        nor save_checkpoint_steps is given; None disables).
      save_checkpoint_steps: global steps between checkpoints instead.
      save_summaries_steps, save_summaries_secs: the summary interval (None
        or 0 disables).
      summary_dir: where the event file goes (default: checkpoint_dir).
      config: a ConfigProto for the sessions.
      stop_grace_period_secs: accepted for TF's signature (no queue runners).
      log_step_count_steps: steps between global_step/sec logs (None or 0: off).
      max_wait_secs: how long a non-chief waits for the chief.
    Returns: a MonitoredSession (use it as a context manager).
    Raises:
      TypeError: a hook is not a SessionRunHook, or scaffold is not a Scaffold.
      ValueError: both save_checkpoint_secs and save_checkpoint_steps given.
    Example:
      >>> with MonitoredTrainingSession(master=server.target, is_chief=(i == 0),
      ...                               checkpoint_dir=logdir, hooks=hooks) as sess:
      ...     while not sess.should_stop():
      ...         sess.run(train_op)
    """
    hooks, chief_only_hooks = check_hooks(hooks), check_hooks(chief_only_hooks)
    scaffold = scaffold if scaffold is not None else Scaffold()
    if not isinstance(scaffold, Scaffold):
        raise TypeError(f"scaffold must be a tf.train.Scaffold, got {scaffold!r}")
    if not is_chief:
        creator = WorkerSessionCreator(scaffold=scaffold, master=master, config=config,
                                       max_wait_secs=max_wait_secs)
        return MonitoredSession(creator, hooks, stop_grace_period_secs)
    secs, steps = _checkpoint_intervals(save_checkpoint_secs, save_checkpoint_steps)
    if secs and steps:
        raise ValueError(f"give save_checkpoint_secs or save_checkpoint_steps, not both: got "
                         f"{secs!r} and {steps!r}")
    all_hooks = chief_only_hooks + hooks
    summary_dir = summary_dir or checkpoint_dir
    if log_step_count_steps and get_global_step() is not None:
        all_hooks.append(StepCounterHook(every_n_steps=log_step_count_steps,
                                         output_dir=summary_dir))
    summary_steps, summary_secs = _summary_intervals(save_summaries_steps, save_summaries_secs)
    if summary_dir and get_global_step() is not None and (
            (summary_steps and summary_steps > 0) or (summary_secs and summary_secs > 0)):
        all_hooks.append(SummarySaverHook(save_steps=summary_steps or None,
                                          save_secs=summary_secs or None,
                                          output_dir=summary_dir, scaffold=scaffold))
    if checkpoint_dir and (secs or steps):
        all_hooks.append(CheckpointSaverHook(checkpoint_dir, save_secs=secs or None,
                                             save_steps=steps or None, scaffold=scaffold))
    creator = ChiefSessionCreator(scaffold=scaffold, master=master, config=config,
                                  checkpoint_dir=checkpoint_dir)
    return MonitoredSession(creator, all_hooks, stop_grace_period_secs)
