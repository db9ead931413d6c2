"""nbcluster: TensorFlow 1.x-style graphs and distributed servers, Jupyter-first.

`import nbcluster as tf` gives the `tf.compat.v1` vocabulary for the op set
nbcluster implements; `nbcluster.compat.v1` is this same namespace.
"""
from nbcluster import errors
from nbcluster.framework.dtypes import (DType, as_dtype, bool, complex64, complex128,  # noqa: A004
                                        double, float16, float32, float64, half, int8, int16,
                                        int32, int64, resource, string, uint8, uint16, uint32,
                                        uint64, variant)
from nbcluster.framework.tensor_shape import TensorShape
from nbcluster.framework.device_spec import DeviceSpec
from nbcluster.framework.graph import Graph, get_default_graph, reset_default_graph
from nbcluster.framework.operation import Operation, Tensor
from nbcluster.framework.constant import constant, convert_to_tensor
from nbcluster.framework.importer import import_graph_def
from nbcluster.framework.default_session import get_default_session
from nbcluster.framework.scopes import (add_to_collection, colocate_with, container,
                                        control_dependencies, device, get_collection,
                                        name_scope)
from nbcluster.ops.array import concat, identity, placeholder, placeholder_with_default, stack
from nbcluster.ops.shapes import (expand_dims, rank, reshape, reverse, shape, shape_n, size,
                                  squeeze, transpose)
from nbcluster.ops.fill import fill, ones, ones_like, zeros, zeros_like
from nbcluster.ops.control import group, no_op, stop_gradient, tuple  # noqa: A004
from nbcluster.ops.math import div_no_nan, floordiv, floormod
from nbcluster.ops.math import div_no_nan as divide_no_nan
from nbcluster.ops.math import floormod as mod
from nbcluster.ops.math import (abs, add, add_n, cast, divide, equal, exp,  # noqa: A004
                                greater, greater_equal, less, less_equal, log, log1p, maximum,
                                minimum, multiply, negative, not_equal, pow, reciprocal, rsqrt, sign, sqrt,
                                square, squared_difference, subtract, tanh, where_v2)
from nbcluster.ops.linalg import matmul
from nbcluster.ops.slicing import (broadcast_to, invert_permutation, pad,  # noqa: A004
                                   slice, strided_slice, unstack)
from nbcluster.framework.indexed_slices import IndexedSlices, IndexedSlicesValue
from nbcluster.ops.array import split, tile
from nbcluster.ops.dynamic_partition import dynamic_partition, dynamic_stitch
from nbcluster.ops.indexing import (boolean_mask, gather, one_hot, setdiff1d, unique,
                                    unsorted_segment_sum, where)
from nbcluster.ops.logic import (is_finite, is_inf, is_nan, logical_and, logical_not,
                                 logical_or, logical_xor)
from nbcluster.ops.clipping import (clip_by_global_norm, clip_by_norm, clip_by_value,
                                    global_norm)
from nbcluster.ops.reduction import count_nonzero, reduce_all, reduce_any
from nbcluster.ops.state import scatter_add, scatter_sub, scatter_update
from nbcluster import math
from nbcluster.grad import GradientTape, NotDifferentiable, gradients
from nbcluster.grad import register_gradient as RegisterGradient
from nbcluster.ops.ranges import range  # noqa: A004 - TF's name
from nbcluster.ops.reduction import (argmax, argmin, reduce_max, reduce_mean, reduce_min,
                                     reduce_sum)
from nbcluster.ops.queue import FIFOQueue
from nbcluster.ops.accumulator import ConditionalAccumulator
from nbcluster.ops.random import (random_normal, random_uniform, set_random_seed,
                                  truncated_normal)
from nbcluster.ops.state import (Variable, assign, assign_add, assign_sub, global_variables,
                                 global_variables_initializer, initialize_all_variables,
                                 is_variable_initialized, local_variables,
                                 local_variables_initializer, trainable_variables,
                                 variables_initializer)
from nbcluster.framework.graph_keys import GraphKeys
from nbcluster.ops.readiness import report_uninitialized_variables
from nbcluster.ops.partitioned_variables import PartitionedVariable, fixed_size_partitioner
from nbcluster.ops.variable_scope import (AUTO_REUSE, VariableScope, get_variable,
                                          get_variable_scope, variable_scope)
from nbcluster.ops.init_ops import Constant as constant_initializer
from nbcluster.ops.init_ops import GlorotNormal as glorot_normal_initializer
from nbcluster.ops.init_ops import GlorotUniform as glorot_uniform_initializer
from nbcluster.ops.init_ops import Ones as ones_initializer
from nbcluster.ops.init_ops import RandomNormal as random_normal_initializer
from nbcluster.ops.init_ops import RandomUniform as random_uniform_initializer
from nbcluster.ops.init_ops import TruncatedNormal as truncated_normal_initializer
from nbcluster.ops.init_ops import VarianceScaling as variance_scaling_initializer
from nbcluster.ops.init_ops import Zeros as zeros_initializer
from nbcluster import nn
from nbcluster.client.session import InteractiveSession, Session
from nbcluster.proto.config_pb2 import (ConfigProto, GPUOptions, GraphOptions,
                                        OptimizerOptions, RPCOptions, RunMetadata, RunOptions)
from nbcluster.proto.graph_pb2 import GraphDef, NodeDef
from nbcluster.function import TensorSpec, function
from nbcluster import compat, distribute, train
from nbcluster import tf_logging as logging
# what TF1 programs call beyond the core (issue 13): Prod, tf.random, tf.initializers,
# the size-based partitioners
from nbcluster.ops.reduction import cumprod, cumsum, reduce_prod
from nbcluster.ops.partitioned_variables import (min_max_variable_partitioner,
                                                 variable_axis_size_partitioner)
from nbcluster.ops.random import random_shuffle
from nbcluster.ops.queue import RandomShuffleQueue
from nbcluster.ops.state import count_up_to
from nbcluster.ops.variable_creators import variable_creator_scope
import nbcluster.ops.resource_variable  # noqa: F401 - registers the resource kind of Variable
from nbcluster.ops.variable_kinds import (disable_resource_variables,
                                         enable_resource_variables,
                                         resource_variables_enabled)
from nbcluster import initializers, random
# tf.data in graph mode and the TFRecord files it reads (issue 16)
from nbcluster import data, io
from nbcluster import io as python_io
from nbcluster.ops.control_flow import Assert
# TF2 graphs' call, If and While ops and the lists and optionals their gradients keep
# intermediates in, for import_graph_def
from nbcluster.ops import functional as _functional
from nbcluster.ops import optional as _optional
from nbcluster.ops import tensor_list as _tensor_list
from nbcluster.ops.control_flow_cond import case, cond
from nbcluster.ops.control_flow_tensor_array import TensorArray
from nbcluster.ops.control_flow_while import while_loop

__version__ = "0.1.0"


_LAZY_MODULES = ("app", "flags", "summary")  # absl / tensorboard load on first use


def __getattr__(name: str):
    # Cluster and LaunchError load on first use: the launchers import grpc.
    if name in ("Cluster", "LaunchError"):
        from nbcluster import launch
        return getattr(launch, name)
    if name in _LAZY_MODULES:
        import importlib
        return importlib.import_module(f"nbcluster.{name}")
    raise AttributeError(f"module 'nbcluster' has no attribute {name!r}")


def load_ipython_extension(ipython) -> None:
    """`%load_ext nbcluster`: registers the %tfserver magics."""
    from nbcluster import jupyter
    jupyter.load_ipython_extension(ipython)


def unload_ipython_extension(ipython) -> None:
    from nbcluster import jupyter
    jupyter.unload_ipython_extension(ipython)


def _register_display() -> None:
    # Inside a kernel a Cluster displays as its live dashboard; IPython is never
    # imported here, only used when the kernel already has it loaded.
    import sys
    if "IPython" in sys.modules:
        from nbcluster import jupyter
        jupyter.register_display_in_kernel()


_register_display()
