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
    "argmax", "equal", "FIFOQueue", "ConditionalAccumulator", "Graph", "get_default_graph", "reset_default_graph",
    "name_scope", "device", "colocate_with", "control_dependencies", "container",
    "import_graph_def", "DeviceSpec", "float16", "float32", "float64", "int32", "int64",
    "bool", "string", "variable_scope", "get_variable", "get_variable_scope", "VariableScope",
    "AUTO_REUSE", "GraphKeys", "local_variables", "local_variables_initializer",
    "zeros_initializer", "ones_initializer", "constant_initializer",
    "random_uniform_initializer", "random_normal_initializer", "truncated_normal_initializer",
    "glorot_uniform_initializer", "glorot_normal_initializer", "variance_scaling_initializer",
    "gather", "one_hot", "unsorted_segment_sum", "tile", "split", "logical_and", "logical_or",
    "logical_not", "logical_xor", "is_nan", "is_inf", "is_finite", "where", "boolean_mask",
    "clip_by_value", "clip_by_norm", "global_norm", "clip_by_global_norm", "reduce_all",
    "reduce_any", "count_nonzero", "scatter_update", "scatter_add", "scatter_sub", "math",
    "report_uninitialized_variables", "IndexedSlices", "IndexedSlicesValue", "unique",
    "PartitionedVariable", "fixed_size_partitioner", "floordiv", "floormod", "mod",
    # what TF1 programs call beyond the core (issue 13)
    "reduce_prod", "random_shuffle", "RandomShuffleQueue", "count_up_to",
    "variable_creator_scope", "variable_axis_size_partitioner", "min_max_variable_partitioner",
    "random", "initializers",
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
    assert tf.nn.embedding_lookup and tf.nn.compute_average_loss
    for name in ("input_producer", "string_input_producer", "range_input_producer",
                 "slice_input_producer", "batch", "shuffle_batch", "limit_epochs"):
        assert getattr(tf.train, name) is not None, name
    assert tf.distribute.InputContext and tf.distribute.ShardedVariable
    assert tf.GraphKeys.QUEUE_RUNNERS == "queue_runners"
    assert issubclass(tf.errors.NotFoundError, tf.errors.OpError)


def test_import_stays_lean():
    """`import nbcluster` loads no gRPC, IPython, widgets, absl or tensorboard: they come
    when first used."""
    import subprocess
    import sys

    from nbcluster.launch import child_env
    heavy = ["grpc", "IPython", "ipywidgets", "nbcluster.launch.cluster",
             "nbcluster.distribute.cluster_coordinator", "absl", "tensorboard"]
    code = ("import sys, nbcluster as tf; tf.Session; tf.train.Saver; "
            f"print([m for m in {heavy!r} if m in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code], env=child_env(), capture_output=True,
                         text=True, timeout=60, check=True).stdout.strip()
    assert out == "[]"


def test_lazy_names_resolve():
    assert tf.Cluster.local and tf.LaunchError.__mro__[1] is RuntimeError
    assert tf.distribute.experimental.ParameterServerStrategy.__name__ == \
        "ParameterServerStrategy"
    assert tf.app.run and tf.flags.DEFINE_string and tf.app.flags is tf.flags
    assert tf.summary.FileWriter and tf.summary.scalar
    with pytest.raises(AttributeError, match="no_such_name"):
        tf.no_such_name  # noqa: B018


def test_tf_math_holds_the_same_functions_as_the_top_level():
    for name in tf.math.__all__:
        assert getattr(tf.math, name) is getattr(tf, name), name
