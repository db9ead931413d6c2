#!/usr/bin/env bash
# After the test process itself died of a signal (a crash in native code): the
# crashing thread's Python stack, printed last where a log's tail shows it.
# faulthandler's dump lists every thread, the crashing one anywhere among dozens of
# idle ones, and a long dump is cut in the middle where only its ends are shown.
# Usage: scripts/crash-report.sh LOG
set -uo pipefail
log=$1
echo "=== crash report: the thread that crashed ==="
# faulthandler marks the thread that crashed "Current thread"; its top 16 lines are
# the crash's frames, the rest pytest's own
if ! awk '/^Current thread /{show=1} show&&(/^$/||++n>16){exit} show{found=1; print}
          END{exit !found}' "$log"; then
  echo "faulthandler marked no thread as the current one: the crash was in a thread" \
       "with no Python frames (a native library's own thread: gRPC core, OpenBLAS, ...)"
fi
