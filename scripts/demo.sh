#!/usr/bin/env bash
# Quick start 1: the main job on a built-in local cluster.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/venv.sh
exec .venv/bin/nbcluster demo "$@"
