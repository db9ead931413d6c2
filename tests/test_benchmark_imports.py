"""Every nbcluster module the benchmarks name exists, including those in the scripts
they hand to subprocess servers as strings (a module moved by a refactor once left
`benchmarks.latency`'s raw gRPC echo server failing at start, in every run)."""
import importlib.util
import pathlib
import re

import pytest

pytestmark = pytest.mark.timeout(60)

BENCHMARKS = pathlib.Path(__file__).resolve().parents[1] / "benchmarks"
NAMED = re.compile(r"\b(?:from|import)\s+(nbcluster(?:\.\w+)*)")


def test_every_module_a_benchmark_names_exists():
    named = {(path.name, m) for path in sorted(BENCHMARKS.glob("*.py"))
             for m in NAMED.findall(path.read_text())}
    assert named, "no benchmark names an nbcluster module: the pattern is broken"
    missing = sorted(f"{script}: {module}" for script, module in named
                     if importlib.util.find_spec(module) is None)
    assert not missing, "\n".join(missing)
