"""Starting clusters of task processes (local for now)."""
from nbcluster.launch.local import LocalCluster, child_env, free_ports

__all__ = ["LocalCluster", "child_env", "free_ports"]
