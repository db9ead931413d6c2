"""tf.distribute.experimental.coordinator: ClusterCoordinator and what it hands out."""
from nbcluster.distribute.cluster_coordinator import ClusterCoordinator
from nbcluster.distribute.remote_value import RemoteValue
from nbcluster.distribute.values import PerWorkerValues

__all__ = ["ClusterCoordinator", "PerWorkerValues", "RemoteValue"]
