"""Only nbcluster/rpc/grpc_transport (and the generated nbcluster/proto) import grpc, and its errors
stay there.

nbcluster/rpc/__init__.py sets GRPC_EXPERIMENTS and GRPC_VERBOSITY, which
gRPC reads once, when it is first imported: a module elsewhere that imported
grpc itself could load it before those settings, in whichever process
happened to import that module first.
"""
import ast
import os
import pathlib
import subprocess
import sys

import pytest

pytestmark = pytest.mark.timeout(120)

ROOT = pathlib.Path(__file__).resolve().parents[1] / "nbcluster"
ALLOWED = ("nbcluster.rpc.grpc_transport", "nbcluster.proto")
SETTINGS = ("GRPC_EXPERIMENTS", "GRPC_VERBOSITY")


def module_name(path: pathlib.Path) -> str:
    parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _is_grpc(module: str) -> bool:
    """grpc itself, or a generated *_pb2_grpc module (which imports grpc)."""
    return module == "grpc" or module.startswith("grpc.") or module.endswith("_pb2_grpc")


def grpc_imports(tree: ast.AST):
    """(line, module) for each import of grpc in `tree`, static or by importlib."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
        elif isinstance(node, ast.Call) and node.args and \
                isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str) \
                and getattr(node.func, "attr", getattr(node.func, "id", "")) in \
                ("import_module", "__import__"):
            names = [node.args[0].value]
        else:
            continue
        found = [name for name in names if _is_grpc(name)]
        if found:
            yield node.lineno, found[0]


def test_the_checker_sees_every_form_of_import():
    source = ("import grpc\nimport grpc.experimental as x\nfrom grpc import StatusCode\n"
              "from nbcluster.proto import worker_pb2_grpc\nimportlib.import_module('grpc')\n"
              "import numpy\nfrom nbcluster.proto import worker_pb2\n")
    assert [line for line, _ in grpc_imports(ast.parse(source))] == [1, 2, 3, 4, 5]


def test_only_rpc_and_proto_import_grpc():
    found = []
    for path in sorted(ROOT.rglob("*.py")):
        name = module_name(path)
        if any(name == a or name.startswith(a + ".") for a in ALLOWED):
            continue
        found += [f"{path.relative_to(ROOT.parent)}:{line} imports {module}"
                  for line, module in grpc_imports(ast.parse(path.read_text()))]
    assert not found, ("grpc belongs to nbcluster/rpc/grpc_transport; import it there:\n"
                       + "\n".join(found))


# A fresh interpreter records the settings at the moment grpc is first found.
_PROBE = """
import json, os, sys

class Watch:
    seen = None
    def find_spec(self, name, path=None, target=None):
        if name == "grpc" and Watch.seen is None:
            Watch.seen = {k: os.environ.get(k) for k in %r}
        return None

sys.meta_path.insert(0, Watch())
%s
print(json.dumps({"grpc": "grpc" in sys.modules, "seen": Watch.seen,
                  "final": {k: os.environ.get(k) for k in %r}}))
"""


@pytest.mark.parametrize("entry", [
    "from nbcluster.launch import Cluster; Cluster.local",
    "import nbcluster.launch.status",
    "import nbcluster.distribute.failure_handling",
    "import nbcluster as tf; tf.distribute.Server.create_local_server().stop()",
    "import nbcluster.jupyter.magics",
])
def test_grpc_is_first_imported_with_the_package_s_settings(entry):
    import json
    env = {k: v for k, v in os.environ.items() if k not in SETTINGS}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT.parent),
                                                      env.get("PYTHONPATH")]))
    done = subprocess.run([sys.executable, "-c", _PROBE % (SETTINGS, entry, SETTINGS)],
                          env=env, capture_output=True, text=True, timeout=90)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["grpc"], f"{entry!r} never imported grpc: nothing was checked"
    # nbcluster.rpc sets both (setdefault): they must be there before grpc loads
    assert all(result["final"].values()), result
    assert result["seen"] == result["final"], f"{entry!r} loaded grpc too early: {result}"


# In a child: it closes gRPC channels that clients still hold, and should gRPC's core
# ever crash over that, the crash fails this test instead of ending the test run.
_FORGOTTEN = """
import pytest
import nbcluster as tf
from nbcluster.launch import free_ports
from nbcluster.rpc.grpc_transport import channels
from nbcluster.rpc.grpc_transport.master_client import GrpcMasterClient
from nbcluster.rpc.grpc_transport.worker_client import GrpcWorkerClient
address = f"127.0.0.1:{free_ports(1)[0]}"  # nothing listens there
old = channels.channel(address)
worker, master = GrpcWorkerClient(address), GrpcMasterClient(address)
channels.forget(address)
with pytest.raises(tf.errors.UnavailableError, match=f"worker {address} .*closed"):
    worker.get_status(1.0)
with pytest.raises(tf.errors.UnavailableError, match=f"worker {address} .*closed"):
    worker.run_graph("s", "g", 1, {}, [], 1.0, False, False)
with pytest.raises(tf.errors.UnavailableError, match=f"grpc://{address} .*closed"):
    master.create_session([])
with pytest.raises(tf.errors.UnavailableError, match=f"grpc://{address} .*closed"):
    master.run_step("h", {}, [], [])
# a new client gets a new channel: refused by the address, not closed
assert channels.channel(address) is not old
with pytest.raises(tf.errors.UnavailableError) as refused:
    GrpcWorkerClient(address).get_status(2.0)
assert "closed" not in str(refused.value)
channels.forget(address)
print("every call failed as it should")
"""


def test_a_client_on_a_forgotten_channel_raises_unavailable_naming_the_task():
    """A client holding a channel `channels.forget` closed gets an OpError, not
    gRPC's ValueError("Cannot invoke RPC on closed channel!")."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT.parent),
                                                      env.get("PYTHONPATH")]))
    done = subprocess.run([sys.executable, "-c", _FORGOTTEN], env=env, capture_output=True,
                          text=True, timeout=90)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "every call failed as it should"
