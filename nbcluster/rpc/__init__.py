"""L3: the wire, in three parts: `codec` (tensor bytes <-> arrays), `grpc_transport`
(servicers, clients, channels, status mapping) and `socket_transport` (the same-host data plane).

gRPC reads GRPC_EXPERIMENTS and GRPC_VERBOSITY when it is first imported.
Turning the event engine off cuts a loopback RPC's latency by about a third
(see PERFORMANCE.md); verbosity ERROR keeps gRPC's INFO lines ("Got goaway",
reconnects) out of notebook cells and terminals, since every failure they
report reaches the caller as an OpError anyway. setdefault: a user's own
setting wins.
"""
import os

os.environ.setdefault("GRPC_EXPERIMENTS", "-event_engine_client,-event_engine_listener")
os.environ.setdefault("GRPC_VERBOSITY", "ERROR")
