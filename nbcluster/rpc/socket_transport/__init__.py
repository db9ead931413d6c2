"""L3: the local-socket transport. A task's tensors, RunGraph and RunStep to peers on the same
host over an abstract Unix socket (the data plane), raw frames beside protobuf control fields."""
