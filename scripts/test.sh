#!/usr/bin/env bash
# README command 2: set everything up, then run the whole test suite (unit and integration).
# Extra arguments go to pytest, e.g. `bash scripts/test.sh -m "not integration"`.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec .venv/bin/pytest "$@"
