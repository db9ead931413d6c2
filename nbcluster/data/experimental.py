"""tf.data.experimental: the names TF1 programs reach for there."""
from nbcluster.data.dataset_value import AUTOTUNE
from nbcluster.data.iterators import make_initializable_iterator, make_one_shot_iterator

__all__ = ["AUTOTUNE", "make_initializable_iterator", "make_one_shot_iterator"]
