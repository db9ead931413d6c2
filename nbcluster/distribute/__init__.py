"""tf.distribute: the Server, ParameterServerStrategy and its ClusterCoordinator."""
from nbcluster.server import Server
from nbcluster.distribute import cluster_resolver, experimental
from nbcluster.distribute.parameter_server_strategy import ReduceOp

__all__ = ["Server", "ReduceOp", "cluster_resolver", "experimental"]
