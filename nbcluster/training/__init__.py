"""L1: what tf.train builds graphs with: optimizers, the global step, device setters, savers."""
