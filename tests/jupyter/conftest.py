"""Fixtures for the Jupyter tier: an IPython shell with the %tfserver magics, process checks.

The shell is IPython's one InteractiveShell for the session (it is a
singleton); each test loads the extension and unloads it at teardown, which
stops whatever the test started, and its variables are removed.
"""
from __future__ import annotations

import os

import pytest

EXTENSION = "nbcluster.jupyter"


@pytest.fixture(scope="session")
def _shell(tmp_path_factory):
    # Keep ~/.ipython (profile, history database) out of the tests.
    before = os.environ.get("IPYTHONDIR")
    os.environ["IPYTHONDIR"] = str(tmp_path_factory.mktemp("ipython"))
    from IPython.core.interactiveshell import InteractiveShell
    from traitlets.config import Config
    config = Config()
    config.HistoryManager.enabled = False
    yield InteractiveShell.instance(config=config)
    if before is None:
        os.environ.pop("IPYTHONDIR", None)
    else:
        os.environ["IPYTHONDIR"] = before


@pytest.fixture
def ip(_shell):
    """The shell with `%load_ext nbcluster.jupyter` done; unloaded (all stopped) at teardown."""
    before = set(_shell.user_ns)
    _shell.run_line_magic("load_ext", EXTENSION)
    yield _shell
    if EXTENSION in _shell.extension_manager.loaded:
        _shell.run_line_magic("unload_ext", EXTENSION)
    for name in set(_shell.user_ns) - before:
        del _shell.user_ns[name]


@pytest.fixture(autouse=True)
def _isolated_jupyter_dirs(tmp_path, monkeypatch):
    # A user-level kernelspec or config must not decide which kernel nbclient runs.
    monkeypatch.setenv("JUPYTER_DATA_DIR", str(tmp_path / "jupyter-data"))
    monkeypatch.setenv("JUPYTER_CONFIG_DIR", str(tmp_path / "jupyter-config"))
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(tmp_path / "jupyter-runtime"))


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """A jupyter server process with nbcluster's server extension (lab_server.py)."""
    from lab_server import jupyter_server
    with jupyter_server(tmp_path_factory.mktemp("server-home")) as started:
        yield started


@pytest.fixture
def same_runtime(server, monkeypatch):
    """This process writes its cluster records where the server reads them."""
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(server["runtime"]))
    return server
