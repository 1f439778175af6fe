#!/usr/bin/env bash
# README command 1: set everything up, then run the main job on embedded defaults.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec .venv/bin/python examples/quickstart.py "$@"
