#!/usr/bin/env bash
# Quick start 2: the whole test suite, as CI runs it.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/venv.sh dev
exec .venv/bin/python -m pytest -q -o faulthandler_timeout=300 "$@"
