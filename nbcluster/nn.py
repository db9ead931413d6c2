"""Facade: tf.nn, the neural-network ops of `ops/` under their TF1 names (defines nothing)."""
from nbcluster.ops.embedding import embedding_lookup
from nbcluster.ops.loss_scaling import compute_average_loss
from nbcluster.ops.math import tanh
from nbcluster.ops.nn import (
                              bias_add,
                              l2_loss,
                              log_softmax,
                              relu,
                              sigmoid,
                              softmax,
                              softmax_cross_entropy_with_logits,
                              softmax_cross_entropy_with_logits_v2,
                              sparse_softmax_cross_entropy_with_logits,
                              xw_plus_b,
)
from nbcluster.ops.sigmoid_losses import (
                              sigmoid_cross_entropy_with_logits,
                              weighted_cross_entropy_with_logits,
)

__all__ = ["bias_add", "compute_average_loss", "embedding_lookup", "l2_loss", "log_softmax", "relu",
           "sigmoid",
           "sigmoid_cross_entropy_with_logits", "softmax", "softmax_cross_entropy_with_logits",
           "softmax_cross_entropy_with_logits_v2", "sparse_softmax_cross_entropy_with_logits",
           "tanh", "weighted_cross_entropy_with_logits", "xw_plus_b"]
