"""L2: placement, partitioning, rendezvous, master and worker logic (no gRPC here)."""
