"""Imports point down only (DESIGN.md's layers; docs/architecture.md)."""
import ast
import pathlib

import pytest

pytestmark = pytest.mark.timeout(30)

ROOT = pathlib.Path(__file__).resolve().parents[1] / "nbcluster"

LAYERS = {
    "nbcluster.errors": 0, "nbcluster.framework": 0, "nbcluster.proto": 0,
    "nbcluster.ops": 1, "nbcluster.kernels": 1, "nbcluster.runtime": 1,
    "nbcluster.grad": 1, "nbcluster.training": 1,
    "nbcluster.distributed": 2,
    "nbcluster.rpc": 3, "nbcluster.rpc.codec": 3, "nbcluster.rpc.grpc_transport": 3,
    "nbcluster.rpc.socket_transport": 3, "nbcluster.server": 3, "nbcluster.client": 3,
    "nbcluster.launch": 4, "nbcluster.distribute": 4,
    "nbcluster": 4, "nbcluster.train": 4, "nbcluster.nn": 4, "nbcluster.compat": 4,
    "nbcluster.cli": 4, "nbcluster.examples": 4, "nbcluster.function": 4,
    "nbcluster.monitored": 4,
    "nbcluster.jupyter": 5,
}


# IPython's `%load_ext nbcluster` looks for its hook at the package root, so the
# namespace's load_ipython_extension is the one place allowed to reach up.
IPYTHON_HOOK = ("nbcluster", "nbcluster.jupyter")


def layer_of(module: str) -> int:
    parts = module.split(".")
    for i in range(len(parts), 0, -1):
        name = ".".join(parts[:i])
        if name in LAYERS:
            return LAYERS[name]
    raise KeyError(module)


def module_name(path: pathlib.Path) -> str:
    rel = path.relative_to(ROOT.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imported_modules(tree: ast.AST):
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module == "nbcluster":  # `from nbcluster import errors`
                for alias in node.names:
                    yield f"nbcluster.{alias.name}"
            else:
                yield node.module


def test_every_module_has_a_layer():
    for path in ROOT.rglob("*.py"):
        layer_of(module_name(path))


def test_imports_point_down_only():
    upward = []
    for path in ROOT.rglob("*.py"):
        name = module_name(path)
        if name.startswith("nbcluster.proto"):
            continue
        mine = layer_of(name)
        for imported in imported_modules(ast.parse(path.read_text())):
            if (name, imported) == IPYTHON_HOOK:
                continue
            if imported.startswith("nbcluster") and layer_of(imported) > mine:
                upward.append(f"{name} (L{mine}) imports {imported} (L{layer_of(imported)})")
    assert not upward, "\n".join(upward)
