#!/usr/bin/env bash
# Creates (once) .venv at the repo root with nbcluster installed editable.
# Usage: scripts/venv.sh [extras], e.g. scripts/venv.sh dev
set -euo pipefail
cd "$(dirname "$0")/.."
extras=${1:-}
if [ ! -x .venv/bin/python ]; then
  python3 -m venv .venv
  .venv/bin/python -m pip install -q --upgrade pip
fi
stamp=".venv/.installed-${extras:-base}"
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
  .venv/bin/python -m pip install -q -e ".${extras:+[$extras]}"
  touch "$stamp"
fi
