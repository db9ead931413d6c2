"""The committed nbcluster/proto/ modules are exactly what scripts/gen_protos.py makes."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.timeout(60)

REPO_ROOT = Path(__file__).resolve().parents[2]
COMMITTED = REPO_ROOT / "nbcluster" / "proto"


def _files(root: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(root.iterdir()) if p.is_file()}


def test_grpc_tools_is_installed():
    # A dev dependency: without it the regeneration check below cannot run,
    # which must read as a failure, not a skip.
    import grpc_tools.protoc  # noqa: F401


def test_regenerated_modules_match_committed(tmp_path):
    done = subprocess.run(
        [sys.executable, str(REPO_ROOT / "scripts" / "gen_protos.py"), "--out", str(tmp_path)],
        capture_output=True, text=True,
    )
    assert done.returncode == 0, done.stderr

    fresh = _files(tmp_path / "nbcluster" / "proto")
    committed = _files(COMMITTED)
    assert sorted(fresh) == sorted(committed), (
        "generated file set differs; run `python scripts/gen_protos.py`")
    stale = [name for name in fresh if fresh[name] != committed[name]]
    assert not stale, (
        f"{stale} differ from a fresh generation; run `python scripts/gen_protos.py` "
        "with the pinned grpcio-tools")


def test_every_proto_has_its_modules():
    protos = sorted(p.stem for p in (REPO_ROOT / "protos" / "nbcluster" / "proto").glob("*.proto"))
    assert protos == ["config", "frames", "graph", "master", "summary", "tensorflow_services",
                      "worker"]
    for stem in protos:
        for suffix in ("_pb2.py", "_pb2.pyi", "_pb2_grpc.py"):
            assert (COMMITTED / f"{stem}{suffix}").is_file(), f"{stem}{suffix} missing"


def test_services_import():
    from nbcluster.proto import master_pb2_grpc, worker_pb2_grpc

    assert hasattr(master_pb2_grpc, "MasterServiceStub")
    assert hasattr(worker_pb2_grpc, "WorkerServiceServicer")
