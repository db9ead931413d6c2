"""L3: the tensor codec. TensorProto and tensor-carrying message bytes <-> arrays, and the
1 MiB-frame chunking of large messages; no sockets, no grpc (tests/test_grpc_confined.py)."""
