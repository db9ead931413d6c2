#!/usr/bin/env bash
# After the test process itself crashed (a signal in native code): the crashing
# thread's stacks, printed last where a log's tail shows them. faulthandler's dump
# lists every thread, the crashing one anywhere among dozens of idle ones.
# Usage: scripts/crash-report.sh LOG [CORE_DIR]
set -uo pipefail
log=$1
dir=${2:-.}
echo "=== crash report ==="
# faulthandler marks the thread that crashed "Current thread"; a thread of a native
# library (no Python frames) has no such entry
awk '/^Current thread /{show=1} show&&(/^$/||++n>16){exit} show' "$log"
core=$(ls -t "$dir"/core "$dir"/core.* 2>/dev/null | head -1)
if [ -z "$core" ]; then
  echo "no core file in $dir (core_pattern: $(cat /proc/sys/kernel/core_pattern 2>/dev/null))"
  exit 0
fi
if ! command -v gdb >/dev/null 2>&1; then
  echo "$core kept; no gdb to read it (apt-get install gdb)"
  exit 0
fi
python=$(readlink -f .venv/bin/python)
echo "--- native stack of the crashing thread ($core) ---"
gdb -batch -q -ex "set print frame-arguments none" -ex "bt 20" "$python" "$core" 2>/dev/null | grep "^#" | cut -c1-200
