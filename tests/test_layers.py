"""Imports point down only, and no module imports itself around a circle (DESIGN.md's
layers; docs/architecture.md).

Every import counts: at module level, inside a function (deferred), relative
(`from . import x`) and `importlib.import_module("nbcluster....")` with a
literal or f-string prefix. A module must be assigned a layer here: a package
listed covers its modules; a module at the package root is listed by name.
"""
import ast
import pathlib
from typing import Iterator, Optional

import pytest

pytestmark = pytest.mark.timeout(30)

ROOT = pathlib.Path(__file__).resolve().parents[1] / "nbcluster"

LAYERS = {
    "nbcluster.errors": 0, "nbcluster.framework": 0, "nbcluster.proto": 0,
    "nbcluster.ops": 1, "nbcluster.kernels": 1, "nbcluster.runtime": 1,
    "nbcluster.grad": 1, "nbcluster.training": 1,
    "nbcluster.master_worker": 2,
    "nbcluster.rpc": 3, "nbcluster.rpc.codec": 3, "nbcluster.rpc.grpc_transport": 3,
    "nbcluster.rpc.socket_transport": 3, "nbcluster.rpc.serving": 3,
    "nbcluster.rpc.peer_status": 3, "nbcluster.rpc.peers": 3,
    "nbcluster.server": 3, "nbcluster.client": 3,
    "nbcluster.launch": 4, "nbcluster.distribute": 4,
    "nbcluster": 4, "nbcluster.train": 4, "nbcluster.nn": 4, "nbcluster.math": 4,
    "nbcluster.random": 4, "nbcluster.initializers": 4, "nbcluster.compat": 4,
    "nbcluster.cli": 4, "nbcluster.app": 4, "nbcluster.flags": 4, "nbcluster.tf_logging": 4,
    "nbcluster.progress": 4, "nbcluster.examples": 4, "nbcluster.function": 4,
    "nbcluster.monitored": 4, "nbcluster.summary": 4, "nbcluster.data": 4, "nbcluster.io": 4,
    "nbcluster.jupyter": 5,
}

# IPython's `%load_ext nbcluster` looks for its hook at the package root, so the
# namespace's load_ipython_extension is the one place allowed to reach up.
IPYTHON_HOOK = ("nbcluster", "nbcluster.jupyter")

# Edges the circle check leaves out, each for a reason that is the design, not an accident.
NOT_CIRCLES = {
    IPYTHON_HOOK: "the IPython hook (above)",
    ("nbcluster.compat", "nbcluster"): "tf.compat.v1 *is* the root namespace",
    ("nbcluster.launch.cluster", "nbcluster.launch.slurm_cluster"):
        "Cluster.slurm(...) returns its subclass SlurmCluster, imported when called",
}


def layer_of(module: str, layers: Optional[dict] = None) -> int:
    """The layer of `module`: its own entry, else its nearest listed package's. The root
    package's entry covers the root `__init__` only, so a new module or package fails."""
    layers = LAYERS if layers is None else layers
    parts = module.split(".")
    if module in layers:
        return layers[module]
    for i in range(len(parts) - 1, 1, -1):
        name = ".".join(parts[:i])
        if name in layers:
            return layers[name]
    raise KeyError(f"{module} has no layer: add it (or its package) to tests/test_layers.py")


def module_name(path: pathlib.Path, root: pathlib.Path = ROOT) -> str:
    rel = path.relative_to(root.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _dynamic_target(node: ast.Call, module: str, is_package: bool) -> Optional[str]:
    """The module (or package prefix) an `importlib.import_module(...)` call names."""
    if getattr(node.func, "attr", getattr(node.func, "id", "")) not in ("import_module",
                                                                         "__import__"):
        return None
    if not node.args:
        return None
    arg = node.args[0]
    if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
        return arg.value
    if isinstance(arg, ast.JoinedStr) and arg.values:
        first = arg.values[0]
        if isinstance(first, ast.Constant):  # f"nbcluster.ops.{family}"
            return first.value.rstrip(".")
        if isinstance(first, ast.FormattedValue) and isinstance(first.value, ast.Name) \
                and first.value.id == "__name__":  # f"{__name__}.{family}": below itself
            return module
    return None


def imported_modules(tree: ast.AST, module: str = "", is_package: bool = False,
                     known: frozenset = frozenset()) -> Iterator[str]:
    """Every nbcluster module `tree` imports, by any of the forms in the module doc;
    `from pkg import name` yields `pkg.name` when that is a module in `known`."""
    package = module if is_package else module.rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[:len(base) - node.level + 1]
                source = ".".join(base + ([node.module] if node.module else []))
            else:
                source = node.module or ""
            for alias in node.names:
                sub = f"{source}.{alias.name}"
                if sub in known or (source == "nbcluster" and not known):
                    yield sub  # `from nbcluster import errors`
                else:
                    yield source
        elif isinstance(node, ast.Call):
            target = _dynamic_target(node, module, is_package)
            if target:
                yield target


def _modules(root: pathlib.Path) -> dict:
    return {module_name(p, root): p for p in root.rglob("*.py")}


def _graph(root: pathlib.Path) -> dict:
    """module -> the set of modules it imports (nbcluster's own, proto left out)."""
    modules = _modules(root)
    known = frozenset(modules)
    top = root.name
    graph = {}
    for name, path in modules.items():
        if name.startswith(f"{top}.proto"):
            continue
        edges = set()
        for imported in imported_modules(ast.parse(path.read_text()), name,
                                         path.name == "__init__.py", known):
            if imported not in known and any(m.startswith(imported + ".") for m in known):
                # a namespace package (no __init__), as an f-string import's prefix names
                # one: every module in it may be the one imported
                edges.update(m for m in known if m.startswith(imported + "."))
                continue
            while imported and imported not in known:  # `pkg.mod.attr` -> `pkg.mod`
                imported = imported.rpartition(".")[0]
            if imported and imported != name:
                edges.add(imported)
        edges = {m for m in edges if m != name and not m.startswith(f"{top}.proto")}
        graph[name] = edges
    return graph


def circles(graph: dict, allowed=()) -> list:
    """The strongly connected components of more than one module (Tarjan's), sorted."""
    graph = {a: {b for b in bs if (a, b) not in allowed} for a, bs in graph.items()}
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(v):
        # iterative: a deep import chain must not hit the recursion limit
        work = [(v, iter(sorted(graph.get(v, ()))))]
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        while work:
            node, children = work[-1]
            for w in children:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(graph.get(w, ())))))
                    break
                if w in on_stack:
                    low[node] = min(low[node], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        w = stack.pop()
                        on_stack.discard(w)
                        component.append(w)
                        if w == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(found)


def upward_imports(root: pathlib.Path, layers: dict, hook=IPYTHON_HOOK) -> list:
    upward = []
    for name, edges in sorted(_graph(root).items()):
        mine = layer_of(name, layers)
        for imported in sorted(edges):
            if (name, imported) == hook:
                continue
            theirs = layer_of(imported, layers)
            if theirs > mine:
                upward.append(f"{name} (L{mine}) imports {imported} (L{theirs})")
    return upward


def test_every_module_has_a_layer():
    missing = []
    for path in ROOT.rglob("*.py"):
        try:
            layer_of(module_name(path))
        except KeyError as e:
            missing.append(str(e))
    assert not missing, "\n".join(missing)


def test_imports_point_down_only():
    upward = upward_imports(ROOT, LAYERS)
    assert not upward, "\n".join(upward)


def test_no_module_imports_itself_around_a_circle():
    found = circles(_graph(ROOT), NOT_CIRCLES)
    assert not found, "import circles:\n" + "\n".join(" -> ".join(c) for c in found)


def unit_of(module: str, layers: Optional[dict] = None) -> str:
    """The entry of the layer table that covers `module` (a package, or a root module)."""
    layers = LAYERS if layers is None else layers
    parts = module.split(".")
    for i in range(len(parts), 0, -1):
        name = ".".join(parts[:i])
        if name in layers and (i == len(parts) or i > 1):
            return name
    raise KeyError(module)


def unit_graph(graph: dict, layers: Optional[dict] = None, allowed=()) -> dict:
    """The import graph between the layer table's entries (`kernels` -> `runtime`)."""
    units: dict = {}
    for a, bs in graph.items():
        for b in bs:
            if (a, b) in allowed:
                continue
            ua, ub = unit_of(a, layers), unit_of(b, layers)
            if ua != ub:
                units.setdefault(ua, set()).add(ub)
    return units


def test_no_package_imports_itself_around_a_circle():
    """Between packages too: `kernels` may use `runtime`, or the reverse, not both."""
    found = circles(unit_graph(_graph(ROOT), allowed=NOT_CIRCLES))
    assert not found, "package circles:\n" + "\n".join(" -> ".join(c) for c in found)


def _package(tmp_path, files: dict) -> pathlib.Path:
    root = tmp_path / "pkg"
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def test_the_checker_sees_circles_relative_and_importlib_imports_and_new_modules(tmp_path):
    root = _package(tmp_path, {
        "__init__.py": "",
        "low/__init__.py": "",
        "low/a.py": "def f():\n    from pkg.low import b\n",        # deferred
        "low/b.py": "from . import a\n",                              # relative
        "low/c.py": "from ..high import x\n",                         # relative, upward
        "low/d.py": "import importlib\nimportlib.import_module('pkg.high.x')\n",
        "low/e.py": "import importlib\nimportlib.import_module(f'pkg.high.{1}')\n",
        "low/f.py": "import importlib\nimportlib.import_module(f'{__name__}.g')\n",
        "high/__init__.py": "",
        "high/x.py": "from pkg.low import a\n",
    })
    layers = {"pkg": 1, "pkg.low": 0, "pkg.high": 1}
    assert circles(_graph(root)) == [["pkg.low.a", "pkg.low.b"]]
    assert circles(_graph(root), {("pkg.low.b", "pkg.low.a")}) == []
    assert circles(unit_graph(_graph(root), layers)) == [["pkg.high", "pkg.low"]]
    assert upward_imports(root, layers, hook=None) == [
        "pkg.low.c (L0) imports pkg.high.x (L1)",
        "pkg.low.d (L0) imports pkg.high.x (L1)",
        "pkg.low.e (L0) imports pkg.high (L1)",
    ]
    (root / "new").mkdir()
    (root / "new" / "y.py").write_text("")
    with pytest.raises(KeyError, match="pkg.new.y has no layer"):
        upward_imports(root, layers, hook=None)  # the root package's entry does not cover it
    assert layer_of("pkg", layers) == 1
