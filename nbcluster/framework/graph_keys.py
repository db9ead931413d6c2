"""`tf.GraphKeys`: the standard collection names (TF's own strings, so graphs and
checkpoints written by TF code find the same collections)."""
from __future__ import annotations


class GraphKeys:
    GLOBAL_VARIABLES = "variables"
    LOCAL_VARIABLES = "local_variables"
    MODEL_VARIABLES = "model_variables"
    TRAINABLE_VARIABLES = "trainable_variables"
    GLOBAL_STEP = "global_step"
    TRAIN_OP = "train_op"
    LOSSES = "losses"
    REGULARIZATION_LOSSES = "regularization_losses"
    UPDATE_OPS = "update_ops"
    SUMMARIES = "summaries"
    SAVERS = "savers"
    QUEUE_RUNNERS = "queue_runners"
    INIT_OP = "init_op"
    LOCAL_INIT_OP = "local_init_op"
    READY_OP = "ready_op"
    READY_FOR_LOCAL_INIT_OP = "ready_for_local_init_op"
    VARIABLES = GLOBAL_VARIABLES  # TF's deprecated alias
