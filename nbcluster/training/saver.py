"""tf.train.Saver: save and restore variables, one shard per device that holds them.

Rule: the Saver only builds graph ops and runs them through the user's
session; the files are written and read by the SaveV2 / RestoreV2 /
MergeV2Checkpoints kernels on the tasks that hold the variables, so a ps
task's variables never cross the network to be saved. Sharded checkpoints
need a directory every task sees (one host, or a shared file system).
"""
from __future__ import annotations

import numbers
import os
import re
import time
from typing import Optional

from nbcluster import errors
from nbcluster.framework.device_spec import DeviceSpec
from nbcluster.framework.graph import graph_of
from nbcluster.framework.operation import Tensor
from nbcluster.kernels import io as io_kernels
from nbcluster.ops import io as io_ops
from nbcluster.ops.array import identity, placeholder_with_default, stack
from nbcluster.ops.control import group
from nbcluster.ops.state import Variable, assign, global_variables
from nbcluster.training import checkpoint_management as management
from nbcluster.training.checkpoint_management import (  # noqa: F401 - tf.train's names
    checkpoint_exists,
    get_checkpoint_state,
    latest_checkpoint,
    update_checkpoint_state,
)

__all__ = ["Saver", "checkpoint_exists", "get_checkpoint_state", "latest_checkpoint",
           "update_checkpoint_state"]

_FAILED_NODE = re.compile(r"\{\{node ([^}]+)\}\}")


def _named_variables(var_list) -> dict:
    """`var_list` as {checkpoint key: Variable}, TF's default keys being op names."""
    if isinstance(var_list, dict):
        items = list(var_list.items())
        for key, _ in items:
            if not isinstance(key, str) or not key:
                raise TypeError(f"var_list keys must be non-empty strings, got {key!r}")
    else:
        if isinstance(var_list, (Variable, Tensor)):
            var_list = [var_list]
        items = [(getattr(v, "op", None) and v.op.name, v) for v in var_list]
    named: dict = {}
    for key, var in items:
        if not isinstance(var, Variable) and not (
                isinstance(var, Tensor) and var.op.type == "VariableV2"):
            raise TypeError(f"Variable to save is not a Variable: {var!r}")
        if key in named:
            raise ValueError(f"At least two variables have the same name: {key}")
        named[key] = var
    return dict(sorted(named.items()))


def _device_of_save(device: str) -> str:
    """CPU:0 of the variable's task: TF's save and restore kernels are host-only."""
    if not device:
        return ""
    return DeviceSpec.from_string(device).replace(device_type="CPU", device_index=0).to_string()


class Saver:
    """Saves and restores variables: one checkpoint shard per device holding some.

    Args:
      var_list: Variables (a list, or a dict checkpoint key -> Variable);
        default: every global variable of the default graph.
      sharded: one SaveV2 per device, run on that device's task, each writing
        `<prefix>-<i>-of-<n>.npz`; False: a single SaveV2 wherever the placer
        puts it, one data file.
      max_to_keep: how many recent checkpoints to keep (None or 0: all).
      keep_checkpoint_every_n_hours: also keep one checkpoint per this period.
      name: the name scope of the saver's ops (default "save").
      restore_sequentially: restore one variable at a time (less memory).
      allow_empty: with no variables, save and restore do nothing instead of
        raising ValueError.
      pad_step_number: `<path>-00000042` instead of `<path>-42`.
      save_relative_paths: the state file holds paths relative to its directory.
      filename: the prefix the save graph uses when none is fed.
    Raises:
      ValueError: no variables (without allow_empty), or two share a key.
      TypeError: an entry of var_list is not a Variable.
      NotImplementedError: a TF option nbcluster lacks (reshape, saver_def, builder).

    Example:
      >>> saver = Saver()
      >>> path = saver.save(sess, "/tmp/train/model.ckpt", global_step=100)
      >>> saver.restore(sess, latest_checkpoint("/tmp/train"))
    """

    def __init__(self, var_list=None, reshape: bool = False, sharded: bool = True,
                 max_to_keep: Optional[int] = 5, keep_checkpoint_every_n_hours: float = 10000.0,
                 name: Optional[str] = None, restore_sequentially: bool = False,
                 saver_def=None, builder=None, defer_build: bool = False,
                 allow_empty: bool = False, write_version=None, pad_step_number: bool = False,
                 save_relative_paths: bool = False, filename: Optional[str] = None) -> None:
        if reshape or saver_def is not None or builder is not None:
            raise NotImplementedError("Saver: reshape, saver_def and builder are not supported")
        if write_version not in (None, 2):
            raise ValueError(f"Saver: only write_version 2 (V2 checkpoints) is supported, "
                             f"got {write_version!r}")
        self._var_list, self._sharded, self._name = var_list, sharded, name
        self._max_to_keep, self._keep_hours = max_to_keep, keep_checkpoint_every_n_hours
        self._restore_sequentially, self._allow_empty = restore_sequentially, allow_empty
        self._pad_step_number, self._relative = pad_step_number, save_relative_paths
        self._filename = filename
        self._last: list = []          # [(prefix, time saved)], oldest first
        self._to_delete: list = []
        self._next_kept_time = time.time() + keep_checkpoint_every_n_hours * 3600
        self._built = False
        if not defer_build:
            self.build()

    # -- the graph -----------------------------------------------------------
    def build(self) -> None:
        """Adds the save and restore ops (done by the constructor unless deferred)."""
        if self._built:
            return
        named = _named_variables(global_variables() if self._var_list is None
                                 else self._var_list)
        self._built = True
        self._empty = not named
        if self._empty:
            if not self._allow_empty:
                raise ValueError("No variables to save")
            return
        graph = graph_of(list(named.values()))
        with graph.as_default(), graph.name_scope(self._name or "save"):
            self._filename_tensor = placeholder_with_default(
                self._filename or "model", [], name="filename")
            groups = self._groups(named)
            self._save_tensor = (self._sharded_save(groups) if self._sharded
                                 else self._single_save(named))
            self._restore_op, self._assigned = self._restore_ops(groups)

    def _groups(self, named: dict) -> list:
        """[(device, {key: Variable})] sorted by device; one group if not sharded."""
        if not self._sharded:
            return [("", named)]
        by_device: dict = {}
        for key, var in named.items():
            device = DeviceSpec.from_string(var.device).to_string()
            by_device.setdefault(device, {})[key] = var
        return sorted(by_device.items())

    def _single_save(self, named: dict) -> Tensor:
        save = io_ops.save_v2(self._filename_tensor, list(named), [""] * len(named),
                              [_value(v) for v in named.values()])
        with save.graph.control_dependencies([save]):
            return identity(self._filename_tensor, name="control_dependency")

    def _sharded_save(self, groups: list) -> Tensor:
        graph, prefixes, saves = self._filename_tensor.graph, [], []
        for i, (device, named) in enumerate(groups):
            with graph.device(_device_of_save(device)):
                prefix = io_ops.sharded_filename(self._filename_tensor, i, len(groups))
                saves.append(io_ops.save_v2(prefix, list(named), [""] * len(named),
                                            [_value(v) for v in named.values()]))
                prefixes.append(prefix)
        # As TF: the merge runs on the last shard's device once every shard is written.
        with graph.control_dependencies(saves), graph.device(_device_of_save(groups[-1][0])):
            merge = io_ops.merge_v2_checkpoints(stack(prefixes), self._filename_tensor)
            with graph.control_dependencies([merge]):
                return identity(self._filename_tensor, name="control_dependency")

    def _restore_ops(self, groups: list):
        graph, assigns, assigned, previous = self._filename_tensor.graph, [], {}, []
        for device, named in groups:
            batches = [{k: v} for k, v in named.items()] if self._restore_sequentially \
                else [named]
            for batch in batches:
                with graph.control_dependencies(previous), \
                        graph.device(_device_of_save(device)):
                    values = io_ops.restore_v2(self._filename_tensor, list(batch),
                                               [""] * len(batch),
                                               [v.dtype for v in batch.values()])
                for (key, var), value in zip(batch.items(), values):
                    # The assign op itself (a resource variable's AssignVariableOp),
                    # which a failed restore names.
                    out = var.assign(value, read_value=False) if isinstance(var, Variable) \
                        else assign(var, value).op
                    assigned[out.name] = key
                    assigns.append(out)
                if self._restore_sequentially:
                    previous = assigns[-len(batch):]
        return group(*assigns, name="restore_all"), assigned

    # -- running it ------------------------------------------------------------
    @property
    def last_checkpoints(self) -> list:
        """The prefixes of the checkpoints not yet deleted, oldest first."""
        return [p for p, _ in self._last]

    def set_last_checkpoints_with_time(self, last_checkpoints_with_time: list) -> None:
        self._last = [(str(p), float(t)) for p, t in last_checkpoints_with_time]

    def recover_last_checkpoints(self, checkpoint_paths: list) -> None:
        """Takes up `checkpoint_paths` (e.g. after a restart) that still exist."""
        found = [(p, os.path.getmtime(io_kernels.index_file(p))) for p in checkpoint_paths
                 if management.checkpoint_exists(p)]
        self.set_last_checkpoints_with_time(found)

    def save(self, sess, save_path: str, global_step=None,
             latest_filename: Optional[str] = None, meta_graph_suffix: str = "meta",
             write_meta_graph: bool = False, write_state: bool = True,
             strip_default_attrs: bool = False, save_debug_info: bool = False
             ) -> Optional[str]:
        """Writes a checkpoint of the variables through `sess`.

        Args:
          sess: a Session (anything with `run`) whose graph holds the variables.
          save_path: the checkpoint prefix, e.g. "/tmp/train/model.ckpt".
          global_step: an int, or a tensor/Variable read through `sess`, that
            suffixes the prefix: "model.ckpt-100".
          latest_filename: the state file's name (default "checkpoint").
          write_meta_graph: must stay False: MetaGraphDef export is not supported.
          write_state: update the state file and delete checkpoints past max_to_keep.
        Returns: the checkpoint's prefix (None for an empty saver with allow_empty).
        Raises:
          ValueError: the parent directory does not exist, or a bad latest_filename.
          TypeError: `sess` is not a session.
          OpError: writing failed on a task (the message names the file).
        """
        self.build()
        if self._empty:
            return None
        if not hasattr(sess, "run"):
            raise TypeError(f"'sess' must be a Session; {sess!r}")
        if write_meta_graph:
            raise NotImplementedError("Saver.save: write_meta_graph=True is not supported "
                                      "(nbcluster has no MetaGraphDef export)")
        latest_filename = latest_filename or management.DEFAULT_STATE_FILE
        if os.path.dirname(latest_filename):
            raise ValueError(f"'latest_filename' must not contain path components: "
                             f"{latest_filename!r}")
        save_path = os.fspath(save_path)
        prefix = save_path
        if global_step is not None:
            step = global_step if isinstance(global_step, numbers.Integral) \
                else sess.run(global_step)
            prefix = f"{save_path}-{int(step):08d}" if self._pad_step_number \
                else f"{save_path}-{int(step)}"
        parent = os.path.dirname(save_path)
        if parent and not os.path.isdir(parent):
            raise ValueError(f"Parent directory of {save_path} doesn't exist, can't save.")
        written = sess.run(self._save_tensor, {self._filename_tensor: prefix})
        written = written.decode("utf-8") if isinstance(written, bytes) else str(written)
        if write_state:
            self._record(written)
            management.update_checkpoint_state(
                parent or ".", written, [p for p, _ in self._last], latest_filename,
                [t for _, t in self._last], self._next_kept_time - self._keep_hours * 3600,
                self._relative)
            self._delete_old()
        return written

    def restore(self, sess, save_path: str) -> None:
        """Loads the variables' values from the checkpoint at `save_path`.

        Each shard's RestoreV2 runs on the device of the variables it feeds and
        finds their data through the checkpoint's index, whichever task wrote it.

        Raises:
          ValueError: save_path is None or no checkpoint is there.
          NotFoundError: a variable is missing from the checkpoint (named).
          InvalidArgumentError: a variable's shape or dtype differs (named).
          DataLossError: a corrupt index or data file (named).
        """
        self.build()
        if self._empty:
            return
        if save_path is None:
            raise ValueError("Can't load save_path when it is None.")
        save_path = os.fspath(save_path)
        if not management.checkpoint_exists(save_path):
            raise ValueError(f"The passed save_path is not a valid checkpoint: {save_path}")
        try:
            sess.run(self._restore_op, {self._filename_tensor: save_path})
        except errors.InvalidArgumentError as e:
            node = e.node_name or next(iter(_FAILED_NODE.findall(e.message)), None)
            key = self._assigned.get(node)
            if key is None:
                raise
            raise errors.InvalidArgumentError(
                None, None, f"Restoring variable '{key}' from checkpoint {save_path} failed: "
                            f"its shape in the graph differs from the checkpoint's. "
                            f"{e.message}", node_name=node) from e

    # -- which checkpoints to keep -------------------------------------------------
    def _record(self, prefix: str) -> None:
        if not self._max_to_keep:
            return
        self._last = [(p, t) for p, t in self._last if p != prefix]
        self._last.append((prefix, time.time()))
        if len(self._last) > self._max_to_keep:
            self._to_delete.append(self._last.pop(0))

    def _delete_old(self) -> None:
        while self._to_delete:
            prefix, saved_at = self._to_delete.pop(0)
            # keep_checkpoint_every_n_hours: one checkpoint per period survives.
            if saved_at > self._next_kept_time:
                self._next_kept_time += self._keep_hours * 3600
                continue
            management.remove_checkpoint(prefix)


def _value(var) -> Tensor:
    return var.value() if isinstance(var, Variable) else var
