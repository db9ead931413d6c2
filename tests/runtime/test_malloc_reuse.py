"""malloc_reuse: a user's GLIBC_TUNABLES threshold wins; otherwise glibc keeps freed blocks."""
from __future__ import annotations

import ctypes
import subprocess
import sys

import pytest

from nbcluster.runtime import malloc_reuse


def test_a_users_glibc_tunables_threshold_wins(monkeypatch):
    monkeypatch.setattr(malloc_reuse, "_done", False)
    assert malloc_reuse.keep_freed_memory(
        {"GLIBC_TUNABLES": "glibc.malloc.mmap_threshold=4096"}) is False


def test_servers_and_local_sessions_apply_it_once_per_process():
    try:
        ctypes.CDLL(None).mallopt
    except AttributeError:
        pytest.skip("not glibc: no mallopt")
    script = ("import os; os.environ.pop('GLIBC_TUNABLES', None)\n"
              "import nbcluster as tf\n"
              "from nbcluster.runtime import malloc_reuse\n"
              "assert not malloc_reuse._done\n"
              "with tf.Session() as s: s.run(tf.constant(1.0))\n"
              "print(malloc_reuse._done)\n")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         timeout=60, check=True).stdout
    assert out.strip() == "True"
