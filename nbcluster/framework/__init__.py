"""L0: graphs, operations, tensors, scopes, device specs, dtypes and shapes."""
# Op inputs that are not Tensors become Consts through constant's converter (graph.py).
from nbcluster.framework import constant  # noqa: E402,F401
