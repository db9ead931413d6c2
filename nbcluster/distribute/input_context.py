"""tf.distribute.InputContext: what a dataset function learns about its input pipeline."""
from __future__ import annotations


class InputContext:
    """Which of `num_input_pipelines` pipelines this is, and the replicas it feeds.

    Args:
      num_input_pipelines: how many pipelines feed the replicas.
      input_pipeline_id: this one's index, in [0, num_input_pipelines).
      num_replicas_in_sync: the replicas one global batch is split over.
    Example:
      >>> InputContext(1, 0, 2).get_per_replica_batch_size(64)
      32
    """

    def __init__(self, num_input_pipelines: int = 1, input_pipeline_id: int = 0,
                 num_replicas_in_sync: int = 1) -> None:
        self._num_input_pipelines = num_input_pipelines
        self._input_pipeline_id = input_pipeline_id
        self._num_replicas_in_sync = num_replicas_in_sync

    num_input_pipelines = property(lambda self: self._num_input_pipelines)
    input_pipeline_id = property(lambda self: self._input_pipeline_id)
    num_replicas_in_sync = property(lambda self: self._num_replicas_in_sync)

    def get_per_replica_batch_size(self, global_batch_size: int) -> int:
        """`global_batch_size` split over the replicas.

        Raises:
          ValueError: it does not divide evenly.
        """
        if global_batch_size % self._num_replicas_in_sync != 0:
            raise ValueError(f"The `global_batch_size` {global_batch_size!r} is not divisible "
                             f"by `num_replicas_in_sync` {self._num_replicas_in_sync!r}")
        return global_batch_size // self._num_replicas_in_sync

    def __repr__(self) -> str:
        return (f"tf.distribute.InputContext(input pipeline id {self._input_pipeline_id}, "
                f"total: {self._num_input_pipelines})")
