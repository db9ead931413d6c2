"""The widgets' JavaScript: the shipped bundles are built from labextension/src, and its
node tests (layout, labels, ticks) pass."""
from __future__ import annotations

import pathlib
import shutil
import subprocess

import pytest

from nbcluster.jupyter.widgets import STATIC

pytestmark = pytest.mark.timeout(120)

LABEXTENSION = pathlib.Path(__file__).resolve().parents[3] / "labextension"
BUNDLES = ("placement.js", "timeline.js")


def test_the_bundles_are_built_from_the_current_sources():
    sources = [p for p in (LABEXTENSION / "src").rglob("*.js") if "tests" not in p.parts]
    newest = max(p.stat().st_mtime for p in sources)
    for name in BUNDLES:
        bundle = STATIC / name
        assert bundle.is_file(), f"{bundle} is missing: pip install -e . (or npm run build " \
                                 f"in labextension/) builds it"
        assert bundle.stat().st_mtime >= newest, \
            f"{bundle} is older than labextension/src: run `npm run build` in labextension/"
        text = bundle.read_text()
        assert "export" in text and "render" in text  # an anywidget ES module
        assert "http://" not in text.replace("http://www.w3.org/", "")  # nothing fetched


@pytest.mark.skipif(shutil.which("node") is None, reason="node is needed to build the widgets")
def test_the_javascript_unit_tests_pass():
    run = subprocess.run(["node", "--test", "src/tests/"], cwd=LABEXTENSION,
                         capture_output=True, text=True, timeout=100)
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
    assert "# fail 0" in run.stdout
