"""Hooks that end training: StopAtStepHook (a global step reached) and NanTensorHook."""
from __future__ import annotations

import logging
import numbers
from typing import Optional

import numpy as np

from nbcluster.training.session_run_hook import SessionRunArgs, SessionRunHook
from nbcluster.training.training_util import get_global_step

logger = logging.getLogger(__name__)


class NanLossDuringTrainingError(RuntimeError):
    """Raised by NanTensorHook when the loss became NaN."""

    def __str__(self) -> str:
        return "NaN loss during training."


def global_step_or_raise(hook: str):
    """The default graph's global step; hooks that count steps need one.

    Raises:
      RuntimeError: the graph has no global step (naming `hook`).
    """
    step = get_global_step()
    if step is None:
        raise RuntimeError(f"Global step should be created to use {hook} "
                           f"(tf.train.get_or_create_global_step()).")
    return step


class StopAtStepHook(SessionRunHook):
    """Requests a stop once the global step reaches a value.

    Args:
      num_steps: stop after this many steps counted from the global step
        found when the (first) session was created.
      last_step: stop once the global step is at least this.
    Raises:
      ValueError: both or neither given, or a negative or non-integer value.
      RuntimeError (at begin): the graph has no global step.
    Example:
      >>> hooks = [StopAtStepHook(last_step=1000)]
    """

    def __init__(self, num_steps: Optional[int] = None,
                 last_step: Optional[int] = None) -> None:
        if (num_steps is None) == (last_step is None):
            raise ValueError(f"Exactly one of num_steps or last_step should be provided, got "
                             f"num_steps={num_steps!r}, last_step={last_step!r}")
        for name, value in (("num_steps", num_steps), ("last_step", last_step)):
            if value is not None and (not isinstance(value, numbers.Integral) or value < 0):
                raise ValueError(f"{name} must be a non-negative integer, got {value!r}")
        self._num_steps = None if num_steps is None else int(num_steps)
        self._last_step = None if last_step is None else int(last_step)

    @property
    def last_step(self) -> Optional[int]:
        """The step to stop at (known once a session was created, for num_steps)."""
        return self._last_step

    def begin(self) -> None:
        self._global_step = global_step_or_raise("StopAtStepHook")

    def after_create_session(self, session, coord) -> None:
        # num_steps counts from the first session only: a recovered session
        # continues towards the same last step.
        if self._last_step is None:
            self._last_step = int(session.run(self._global_step)) + self._num_steps

    def before_run(self, run_context) -> SessionRunArgs:
        return SessionRunArgs(self._global_step)

    def after_run(self, run_context, run_values) -> None:
        # The value fetched may predate this step's increment: only when it is
        # close is the step read again, to stop exactly at last_step.
        if int(run_values.results) + 1 >= self._last_step:
            if int(run_context.session.run(self._global_step)) >= self._last_step:
                run_context.request_stop()


class NanTensorHook(SessionRunHook):
    """Watches a loss tensor: a NaN raises, or requests a stop.

    Args:
      loss_tensor: the scalar loss tensor (or its name).
      fail_on_nan_loss: raise NanLossDuringTrainingError (True), or log an
        error and request a stop (False).
    Raises:
      NanLossDuringTrainingError (from run): the loss was NaN and fail_on_nan_loss.
    Example:
      >>> hooks = [NanTensorHook(model.loss)]
    """

    def __init__(self, loss_tensor, fail_on_nan_loss: bool = True) -> None:
        self._loss_tensor = loss_tensor
        self._fail_on_nan_loss = fail_on_nan_loss

    def before_run(self, run_context) -> SessionRunArgs:
        return SessionRunArgs(self._loss_tensor)

    def after_run(self, run_context, run_values) -> None:
        if np.isnan(run_values.results).any():
            if self._fail_on_nan_loss:
                logger.error("Model diverged with loss = NaN.")
                raise NanLossDuringTrainingError
            logger.error("Model diverged with loss = NaN; stopping training.")
            run_context.request_stop()
