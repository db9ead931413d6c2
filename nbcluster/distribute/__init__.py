"""tf.distribute: the Server, ParameterServerStrategy and its ClusterCoordinator.

`experimental` loads on first use: the coordinator talks gRPC, and `import
nbcluster` must not pay for importing grpc.
"""
import importlib

from nbcluster.distribute import cluster_resolver
from nbcluster.distribute.input_context import InputContext
from nbcluster.distribute.parameter_server_strategy import ReduceOp
from nbcluster.distribute.sharded_variable import ShardedVariable
from nbcluster.server import Server

__all__ = ["Server", "ReduceOp", "cluster_resolver", "experimental", "InputContext",
           "ShardedVariable"]


def __getattr__(name: str):
    if name == "experimental":
        return importlib.import_module(f"{__name__}.experimental")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
