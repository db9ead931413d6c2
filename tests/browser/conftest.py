"""Fixtures for the browser tier: a JupyterLab server on 127.0.0.1 and Debian's headless Chromium.

Recipe: /work/shared/recipes/browser.md. The server runs with isolated JUPYTER_* dirs, a
token, and no news or update checks; its teardown shuts it down over the REST API, which
also stops its kernels, and kills its process group only if that fails.
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = "/usr/bin/chromium"
TOKEN = "nbcluster-browser-test"
STABLE_OUTPUT = ROOT / "test-output" / "browser"  # screenshots a human can open after CI
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                 "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run", "--disable-quic"]

# Pre-written user settings: the news toast would cover the page, and windowing would
# leave cells outside the viewport unrendered, hiding widgets from the DOM checks.
_SETTINGS = {
    "@jupyterlab/apputils-extension/notification.jupyterlab-settings": {"fetchNews": "false"},
    "@jupyterlab/notebook-extension/tracker.jupyterlab-settings": {"windowingMode": "none"},
}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _missing_browser() -> str | None:
    """Why the browser tier cannot run here, or None when it can."""
    if not os.access(CHROMIUM, os.X_OK):
        return f"{CHROMIUM} is missing (.ci/run installs Debian's chromium)"
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "playwright is not installed (.ci/run installs it with the dev extras)"
    return None


def _lab_env(home: Path) -> dict:
    env = dict(os.environ,
               JUPYTER_CONFIG_DIR=str(home / "config"), JUPYTER_DATA_DIR=str(home / "data"),
               JUPYTER_RUNTIME_DIR=str(home / "runtime"), IPYTHONDIR=str(home / "ipython"),
               JUPYTERLAB_SETTINGS_DIR=str(home / "settings"),
               JUPYTERLAB_WORKSPACES_DIR=str(home / "workspaces"),
               PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    env.pop("JUPYTER_PATH", None)
    return env


def _wait_ready(proc: subprocess.Popen, url: str, log: Path, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            urllib.request.urlopen(f"{url}/api/status?token={TOKEN}", timeout=2)
            return
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=10)
                raise RuntimeError(f"jupyter lab did not come up:\n{log.read_text()}")
            time.sleep(0.25)


@pytest.fixture(scope="session")
def jupyter_lab(tmp_path_factory):
    """A running JupyterLab: {"url", "root" (its root dir), "token", "pid", "log"}."""
    reason = _missing_browser()
    if reason:
        pytest.skip(reason)
    root, home = tmp_path_factory.mktemp("lab-root"), tmp_path_factory.mktemp("lab-home")
    for name, value in _SETTINGS.items():
        path = home / "settings" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(value))
    port, log_path = _free_port(), home / "lab.log"
    cmd = [sys.executable, "-m", "jupyterlab", "--no-browser",
           "--ServerApp.ip=127.0.0.1", f"--ServerApp.port={port}", "--ServerApp.port_retries=0",
           "--ServerApp.allow_root=True",  # CI runs as root
           f"--IdentityProvider.token={TOKEN}", f"--ServerApp.root_dir={root}",
           "--LabApp.news_url=None",
           "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
           "--LabApp.extension_manager=readonly",  # no PyPI queries
           "--LabApp.expose_app_in_browser=True"]  # window.jupyterapp, for the kernel waits
    url = f"http://127.0.0.1:{port}"
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(cmd, cwd=root, env=_lab_env(home), stdout=log,
                                stderr=subprocess.STDOUT, start_new_session=True)
        _wait_ready(proc, url, log_path)
        try:
            yield {"url": url, "root": root, "token": TOKEN, "pid": proc.pid, "log": log_path}
        finally:
            _shutdown(proc, url)


def _shutdown(proc: subprocess.Popen, url: str) -> None:
    try:  # a clean shutdown also stops the kernels
        urllib.request.urlopen(urllib.request.Request(
            f"{url}/api/shutdown", method="POST",
            headers={"Authorization": f"token {TOKEN}"}), timeout=5)
        proc.wait(timeout=15)
    except (OSError, subprocess.TimeoutExpired):
        os.killpg(proc.pid, signal.SIGKILL)  # our own process group only
        proc.wait(timeout=10)


@pytest.fixture(scope="session")
def browser(jupyter_lab):
    """Debian's Chromium, headless, driven by Playwright (never `playwright install`)."""
    from playwright.sync_api import sync_playwright
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True,
                              timeout=60_000)
        try:
            yield b
        finally:
            b.close()


@pytest.fixture
def shots(tmp_path, request, capsys):
    """`save(name, target)`: screenshots `target` (page or element) to tmp_path/name.png.

    Each file is also copied to test-output/browser/<test>-<name>.png under the repo root,
    and every path is printed at teardown, even when the test failed.
    """
    saved: list = []
    test = request.node.name.replace("/", "_")

    def save(name: str, target) -> Path:
        path = tmp_path / f"{name}.png"
        target.screenshot(path=str(path))
        STABLE_OUTPUT.mkdir(parents=True, exist_ok=True)
        stable = STABLE_OUTPUT / f"{test}-{name}.png"
        shutil.copyfile(path, stable)
        saved.append((path, stable))
        return path

    yield save
    with capsys.disabled():
        for path, stable in saved:
            print(f"\nscreenshot: {path}\n        and {stable}")
