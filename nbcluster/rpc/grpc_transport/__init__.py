"""L3: the gRPC transport. Servicers and clients, channels, status <-> OpError mapping,
streamed messages, bounded waits and the token interceptors: the only package that imports grpc."""
