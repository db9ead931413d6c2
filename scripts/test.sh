#!/usr/bin/env bash
# Quick start 2: the whole test suite, as CI runs it.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/venv.sh dev
if [ ! -x /usr/sbin/sshd ]; then
  echo "note: no /usr/sbin/sshd: the SSH launcher test will skip" \
       "(apt-get install openssh-server openssh-client; .ci/run does)" >&2
fi
# Lint first ([tool.ruff] in pyproject.toml: pyflakes, import order): seconds, not minutes.
.venv/bin/ruff check .
exec .venv/bin/python -m pytest -q -o faulthandler_timeout=300 "$@"
