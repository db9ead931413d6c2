"""protos/ is the whole contract: every method a server registers is declared in its
service, with the same streaming on either side, and every declared method is served."""
import pytest

from nbcluster.proto import master_pb2, tensorflow_services_pb2, worker_pb2
from nbcluster.rpc.grpc_transport.master_service import master_handler
from nbcluster.rpc.grpc_transport.tensorflow_master import tensorflow_master_handler
from nbcluster.rpc.grpc_transport.tensorflow_worker import NOT_SERVED, tensorflow_worker_handler
from nbcluster.rpc.grpc_transport.worker_service import worker_handler

pytestmark = pytest.mark.timeout(30)


def _declared(descriptor, service: str) -> dict:
    svc = descriptor.services_by_name[service]
    return {f"/{svc.full_name}/{m.name}": (m.client_streaming, m.server_streaming)
            for m in svc.methods}


def _served(handler) -> dict:
    # grpc's generic handler keeps its table here; `service()` answers one path at a time
    return {path: (h.request_streaming, h.response_streaming)
            for path, h in handler._method_handlers.items()}


@pytest.mark.parametrize("descriptor, service, handler", [
    (master_pb2.DESCRIPTOR, "MasterService", master_handler(object())),
    (worker_pb2.DESCRIPTOR, "WorkerService", worker_handler(object())),
])
def test_every_served_method_is_declared_with_its_streaming(descriptor, service, handler):
    declared, served = _declared(descriptor, service), _served(handler)
    assert served == declared
    for path in declared:  # the public lookup finds each, as a call would
        details = type("Details", (), {"method": path, "invocation_metadata": ()})()
        assert handler.service(details) is not None, path


def test_the_wire_paths_are_today_s():
    """No byte on the wire changes for existing peers: the paths stay nbcluster's."""
    assert set(_declared(master_pb2.DESCRIPTOR, "MasterService")) == {
        f"/nbcluster.MasterService/{m}" for m in (
            "CreateSession", "ExtendSession", "RunStep", "CloseSession", "ListDevices",
            "Reset", "RunStepStreamed", "PullResponse")}
    assert set(_declared(worker_pb2.DESCRIPTOR, "WorkerService")) == {
        f"/nbcluster.WorkerService/{m}" for m in (
            "GetStatus", "CreateWorkerSession", "DeleteWorkerSession", "RegisterGraph",
            "DeregisterGraph", "RunGraph", "CleanupGraph", "CleanupAll", "RecvTensor",
            "RunGraphStreamed", "RecvTensorStreamed", "PullResponse", "RecvTensors")}


@pytest.mark.parametrize("service, handler", [
    ("MasterService", tensorflow_master_handler(object())),
    ("WorkerService", tensorflow_worker_handler(object(), None)),
])
def test_tensorflow_s_services_are_declared_as_served(service, handler):
    """TF's paths (/tensorflow.MasterService/...) are declared too; what is served beyond
    the declaration is only TF's methods answered UNIMPLEMENTED."""
    declared, served = _declared(tensorflow_services_pb2.DESCRIPTOR, service), _served(handler)
    assert all(path.startswith(f"/tensorflow.{service}/") for path in declared)
    refused = {f"/tensorflow.WorkerService/{m}" for m in NOT_SERVED} \
        if service == "WorkerService" else set()
    assert {p: s for p, s in served.items() if p not in refused} == declared
    assert all(s == (False, False) for s in declared.values())  # one unary message each way
