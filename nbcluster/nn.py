"""tf.nn: the neural-network ops."""
from nbcluster.ops.nn import (relu, sigmoid, softmax, softmax_cross_entropy_with_logits,
                              softmax_cross_entropy_with_logits_v2,
                              sparse_softmax_cross_entropy_with_logits)
from nbcluster.ops.math import tanh
from nbcluster.ops.embedding import embedding_lookup

__all__ = ["embedding_lookup", "relu", "sigmoid", "softmax", "softmax_cross_entropy_with_logits",
           "softmax_cross_entropy_with_logits_v2", "sparse_softmax_cross_entropy_with_logits",
           "tanh"]
