"""Starting clusters of task processes: the Cluster object, its launchers, cluster resolvers.

Names load on first use: the Cluster machinery imports grpc (through
`nbcluster.rpc`, the only package that may), and `import nbcluster` (which
reaches the resolvers through `tf.distribute`) must not pay for it.
"""
import importlib

_HOMES = {
    "Cluster": "cluster", "LaunchError": "errors", "LocalLauncher": "launcher",
    "child_env": "process", "free_ports": "process",
    "ClusterResolver": "resolvers", "SimpleClusterResolver": "resolvers",
    "SlurmClusterResolver": "resolvers", "TFConfigClusterResolver": "resolvers",
    "expand_hostlist": "resolvers", "TaskStatus": "status",
}

__all__ = sorted(_HOMES)


def __getattr__(name: str):
    if name not in _HOMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{_HOMES[name]}"), name)
    globals()[name] = value
    return value


def __dir__() -> list:
    return sorted(set(globals()) | set(_HOMES))
