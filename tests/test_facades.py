"""The namespace facades (`math.py`, `nn.py`, `train.py`, `random.py` at the package root, and
any module whose docstring starts with "Facade") only re-export: they define nothing."""
import ast
import pathlib

import pytest

pytestmark = pytest.mark.timeout(30)

ROOT = pathlib.Path(__file__).resolve().parents[1] / "nbcluster"
FACADES = ("math.py", "nn.py", "train.py", "random.py")


def definitions(tree: ast.Module) -> list:
    """(line, what) for each statement of `tree` that is not its docstring, an import or
    the `__all__` list."""
    found = []
    for i, node in enumerate(tree.body):
        if i == 0 and isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            continue  # the docstring
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            continue
        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if all(isinstance(t, ast.Name) and t.id == "__all__" for t in targets):
                continue
        found.append((node.lineno, type(node).__name__))
    return found


def _is_facade(tree: ast.Module) -> bool:
    doc = ast.get_docstring(tree) or ""
    return doc.startswith("Facade")


def test_the_root_facades_say_so():
    for name in FACADES:
        assert _is_facade(ast.parse((ROOT / name).read_text())), \
            f"nbcluster/{name}: its docstring must start with 'Facade'"


def test_facades_define_nothing():
    found = []
    for path in sorted(ROOT.rglob("*.py")):
        tree = ast.parse(path.read_text())
        if _is_facade(tree):
            found += [f"{path.relative_to(ROOT.parent)}:{line} defines ({what})"
                      for line, what in definitions(tree)]
    assert not found, "a facade only re-exports; define it where it lives:\n" + "\n".join(found)


def test_the_checker_sees_definitions():
    source = ('"""Facade: x."""\nfrom a import b\nimport c\n__all__ = ["b"]\n'
              'def f():\n    pass\nclass C:\n    pass\nY = 1\n')
    assert definitions(ast.parse(source)) == [(5, "FunctionDef"), (7, "ClassDef"), (9, "Assign")]
