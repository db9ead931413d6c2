"""scripts/crash-report.sh: after a process died of a signal, the crashing thread's
Python stack (from faulthandler's dump of every thread) comes last, alone."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

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


def _report(log: Path) -> str:
    done = subprocess.run(["bash", str(ROOT / "scripts" / "crash-report.sh"), str(log)],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_the_crashing_threads_python_stack_is_printed_alone(tmp_path):
    done = subprocess.run([sys.executable, "-c", _CRASH], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode < 0, done
    assert "Thread 0x" in done.stderr  # the dump has the idle thread too
    log = tmp_path / "test.log"
    log.write_text("....\n" + done.stderr)
    report = _report(log)
    assert "Current thread" in report and "crash_here" in report
    assert "Thread 0x" not in report  # the idle thread's stack is left out


def test_a_crash_in_a_thread_without_python_frames_is_said_to_be_one(tmp_path):
    log = tmp_path / "test.log"
    log.write_text("....Fatal Python error: Segmentation fault\n\n"
                   "Thread 0x00007f6ca3fff6c0 (most recent call first):\n"
                   '  File "/x/thread_pool.py", line 55 in _serve\n\n')
    report = _report(log)
    assert "no Python frames" in report and "_serve" not in report
