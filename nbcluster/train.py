"""tf.train: cluster description and the server."""
from nbcluster.framework.cluster_spec import ClusterSpec
from nbcluster.proto.config_pb2 import ClusterDef, JobDef, ServerDef
from nbcluster.server import Server

__all__ = ["ClusterSpec", "ClusterDef", "JobDef", "Server", "ServerDef"]
