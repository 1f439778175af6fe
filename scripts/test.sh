#!/usr/bin/env bash
# README command 2: set everything up, then run the whole test suite (unit and integration).
# Extra arguments go to pytest, e.g. `bash scripts/test.sh -m "not integration"`. The suite runs as two pytest
# processes side by side sharing one Kafka reference (lakefeed_testing/suite.py); LAKEFEED_TEST_STREAMS=1 runs one.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec .venv/bin/python -m lakefeed_testing.suite "$@"
