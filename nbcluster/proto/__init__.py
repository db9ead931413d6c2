"""Generated protobuf and gRPC modules (sources in protos/; never edit by hand)."""
