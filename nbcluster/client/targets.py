"""Session targets: "" (a private in-process master) or "grpc://host:port"."""
from __future__ import annotations

from nbcluster import errors
from nbcluster.proto import config_pb2


def connect(target: str, config=None):
    """A master for `target`: in process when possible, else the client `rpc.peers` picks."""
    if target == "":
        return local_master(config)
    if target.startswith("grpc://"):
        from nbcluster import server
        from nbcluster.rpc.peers import master_client
        return master_client(target[len("grpc://"):], config, server.local_master(target))
    raise errors.NotFoundError(None, None, f"No session factory registered for the given "
                                           f"session options: {{target: \"{target}\"}} "
                                           f"(use \"\" or \"grpc://host:port\")")


def local_master(config=None):
    """A private master + worker for one in-process session (TF's DirectSession)."""
    from nbcluster.master_worker.master import Master
    from nbcluster.master_worker.transport import LocalWorkerCache
    from nbcluster.master_worker.worker import Worker
    from nbcluster.runtime.devices import local_devices
    from nbcluster.runtime.malloc_reuse import keep_freed_memory

    keep_freed_memory()
    config = config or config_pb2.ConfigProto()
    devices = local_devices("localhost", 0, dict(config.device_count),
                            config.gpu_options.visible_device_list)
    worker = Worker("localhost", 0, devices)
    return Master(("localhost", 0), LocalWorkerCache(worker))
