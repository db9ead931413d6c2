"""L0: graphs, operations, tensors, scopes, device specs, dtypes and shapes."""
