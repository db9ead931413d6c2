"""scripts/crash-report.sh: after a process died of a signal, the crashing thread's
Python stack (from faulthandler's dump) and native stack (from its core) come last."""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# One idle thread besides the crashing one: the report must pick the crashing one.
_CRASH = """
import ctypes, faulthandler, threading, time
faulthandler.enable()
threading.Thread(target=time.sleep, args=(60,), daemon=True).start()
def crash_here():
    ctypes.string_at(0)
crash_here()
"""


def _crash(where: Path) -> str:
    # a shell raises the core limit (as .ci/run does): no preexec_fn in a threaded pytest
    done = subprocess.run(["bash", "-c", 'ulimit -c unlimited 2>/dev/null; exec "$0" -c "$1"',
                           sys.executable, _CRASH], cwd=where, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode < 0, done
    return done.stderr


def _report(log: Path, where: Path) -> str:
    (where / ".venv" / "bin").mkdir(parents=True)
    (where / ".venv" / "bin" / "python").symlink_to(sys.executable)
    done = subprocess.run(["bash", str(ROOT / "scripts" / "crash-report.sh"), str(log), "."],
                          cwd=where, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_the_crashing_threads_python_and_native_stacks_are_printed(tmp_path):
    log = tmp_path / "test.log"
    log.write_text("....\n" + _crash(tmp_path))
    report = _report(log, tmp_path)
    python_part = report.split("--- native stack")[0]
    assert "Current thread" in python_part and "crash_here" in python_part
    assert "Thread 0x" not in python_part  # the idle thread's stack is left out
    cores = list(tmp_path.glob("core*"))
    if not cores:
        pytest.skip("this host writes no core file into the working directory "
                    f"(kernel.core_pattern {Path('/proc/sys/kernel/core_pattern').read_text()!r})")
    if shutil.which("gdb") is None:
        pytest.skip("no gdb to read the core: apt-get install gdb (.ci/run does)")
    native = report.split("--- native stack")[1]
    assert "string_at" in native or "strlen" in native, report
