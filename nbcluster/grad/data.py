"""tf.data's ops carry no gradient: a pipeline's elements are inputs, not parameters."""
from nbcluster.grad.gradient_table import NotDifferentiable
from nbcluster.ops.data import DATASET_INPUTS

for _op_type in (*DATASET_INPUTS, "DummySeedGenerator", "IteratorV2", "MakeIterator",
                 "OneShotIterator", "IteratorGetNext", "IteratorToStringHandle", "_Arg", "_Retval"):
    NotDifferentiable(_op_type)
