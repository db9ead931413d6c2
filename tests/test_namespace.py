"""The public namespace: TF1's names, and compat.v1 as the same module."""
import pytest

import nbcluster
import nbcluster as tf

pytestmark = pytest.mark.timeout(30)

TF1_NAMES = [
    "Session", "InteractiveSession", "ConfigProto", "GPUOptions", "RunOptions", "RunMetadata",
    "GraphOptions", "placeholder", "placeholder_with_default", "Variable", "constant",
    "global_variables_initializer", "variables_initializer", "global_variables",
    "trainable_variables", "identity", "no_op", "group", "add", "subtract", "multiply",
    "divide", "negative", "matmul", "reduce_sum", "reduce_mean", "reduce_max", "reduce_min",
    "reshape", "transpose", "concat", "stack", "zeros", "ones", "fill", "shape", "cast",
    "square", "sqrt", "exp", "log", "tanh", "maximum", "random_normal", "random_uniform",
    "argmax", "equal", "FIFOQueue", "Graph", "get_default_graph", "reset_default_graph",
    "name_scope", "device", "colocate_with", "control_dependencies", "container",
    "import_graph_def", "DeviceSpec", "float16", "float32", "float64", "int32", "int64",
    "bool", "string",
]


def test_compat_v1_is_the_top_level_namespace():
    import nbcluster.compat.v1 as v1

    assert v1 is nbcluster
    assert nbcluster.compat.v1 is nbcluster


@pytest.mark.parametrize("name", TF1_NAMES)
def test_tf1_name_is_exported(name):
    assert getattr(tf, name) is not None


def test_nested_namespaces():
    assert tf.train.ClusterSpec and tf.train.Server and tf.train.ServerDef
    assert tf.train.ClusterDef and tf.distribute.Server is tf.train.Server
    assert tf.nn.relu and tf.nn.softmax_cross_entropy_with_logits_v2 and tf.nn.sigmoid
    assert issubclass(tf.errors.NotFoundError, tf.errors.OpError)
