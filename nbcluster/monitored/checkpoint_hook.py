"""CheckpointSaverHook: checkpoints when a session starts, every N steps or seconds, at the end."""
from __future__ import annotations

import logging
import os
from typing import Optional

from nbcluster.monitored.stop_hooks import global_step_or_raise
from nbcluster.monitored.timer import SecondOrStepTimer
from nbcluster.training.saver import Saver
from nbcluster.training.session_run_hook import SessionRunArgs, SessionRunHook

logger = logging.getLogger(__name__)


class CheckpointSaverHook(SessionRunHook):
    """Saves `<checkpoint_dir>/<checkpoint_basename>-<global step>` checkpoints.

    A checkpoint is written right after each session is created (the state
    the run starts from, restored or initialized; the graph is written then
    too, as graph.pbtxt and to the directory's event file), whenever `save_steps`
    global steps or `save_secs` seconds have passed, and at the end unless
    the last step was just saved.

    Args:
      checkpoint_dir: the directory (created if missing); every task holding
        variables must see it (docs/checkpoint.md).
      save_secs: save every this many seconds.
      save_steps: save every this many global steps (exactly one of the two).
      saver: the Saver to use; default: the scaffold's, else a sharded Saver
        of every global variable made at begin().
      checkpoint_basename: the file prefix inside checkpoint_dir.
      scaffold: a Scaffold whose saver to use.
    Raises:
      ValueError: both saver and scaffold, or not exactly one of save_secs and
        save_steps, or a non-positive interval.
      RuntimeError (at begin): the graph has no global step.
    Example:
      >>> hooks = [CheckpointSaverHook("/tmp/train", save_steps=100)]
    """

    def __init__(self, checkpoint_dir: str, save_secs: Optional[float] = None,
                 save_steps: Optional[int] = None, saver: Optional[Saver] = None,
                 checkpoint_basename: str = "model.ckpt", scaffold=None) -> None:
        if saver is not None and scaffold is not None:
            raise ValueError(f"You cannot provide both saver ({saver!r}) and scaffold "
                             f"({scaffold!r}).")
        if not checkpoint_dir:
            raise ValueError(f"checkpoint_dir must name a directory, got {checkpoint_dir!r}")
        self._timer = SecondOrStepTimer(every_secs=save_secs, every_steps=save_steps)
        self._dir = os.fspath(checkpoint_dir)
        self._path = os.path.join(self._dir, checkpoint_basename)
        self._saver, self._scaffold = saver, scaffold
        self.saved_steps: list = []  # the global step of every checkpoint written

    def begin(self) -> None:
        os.makedirs(self._dir, exist_ok=True)
        self._global_step = global_step_or_raise("CheckpointSaverHook")
        if self._saver is None and self._scaffold is None:
            # begin() is the last moment ops may be added to the graph.
            self._saver = Saver(sharded=True, allow_empty=True)
        self._timer.reset()

    def _get_saver(self) -> Saver:
        return self._saver if self._saver is not None else self._scaffold.saver

    def after_create_session(self, session, coord) -> None:
        # As TF's hook: the graph goes to the directory once the graph is final
        # (graph.pbtxt, and the event file TensorBoard's graph tab reads).
        from google.protobuf import text_format

        from nbcluster.summary import FileWriterCache
        graph_def = session.graph.as_graph_def(add_shapes=True)
        with open(os.path.join(self._dir, "graph.pbtxt"), "w") as f:
            f.write(text_format.MessageToString(graph_def))
        FileWriterCache.get(self._dir).add_graph(None, graph_def=graph_def)
        step = int(session.run(self._global_step))
        self._save(session, step)

    def before_run(self, run_context) -> SessionRunArgs:
        return SessionRunArgs(self._global_step)

    def after_run(self, run_context, run_values) -> None:
        # The fetched step may predate this run's increment; read it again only
        # when a save may be due, so most steps cost nothing extra.
        if self._timer.should_trigger_for_step(int(run_values.results) + 1):
            step = int(run_context.session.run(self._global_step))
            if self._timer.should_trigger_for_step(step):
                self._save(run_context.session, step)

    def end(self, session) -> None:
        step = int(session.run(self._global_step))
        if step != self._timer.last_triggered_step():
            self._save(session, step)

    def _save(self, session, step: int) -> None:
        self._timer.update_last_triggered_step(step)
        logger.info("Saving checkpoints for %d into %s.", step, self._path)
        self._get_saver().save(session, self._path, global_step=step)
        self.saved_steps.append(step)
