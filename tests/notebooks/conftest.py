"""Fixtures for the tutorial notebooks: kernels run in isolated Jupyter/IPython dirs."""
from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _isolated_jupyter_dirs(tmp_path, monkeypatch):
    # A user-level kernelspec or config must not decide which kernel nbclient runs.
    monkeypatch.setenv("JUPYTER_DATA_DIR", str(tmp_path / "jupyter-data"))
    monkeypatch.setenv("JUPYTER_CONFIG_DIR", str(tmp_path / "jupyter-config"))
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(tmp_path / "jupyter-runtime"))
    monkeypatch.setenv("IPYTHONDIR", str(tmp_path / "ipython"))
    # A notebook starts no TensorBoard server (%tensorboard) in a headless run.
    monkeypatch.setenv("NBCLUSTER_HEADLESS", "1")
