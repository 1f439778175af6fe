#!/usr/bin/env bash
# One idempotent setup for both README commands: system packages, .venv with the project and its
# dev extras, and warm jar caches (Kafka via Maven in ~/.m2, Delta + Kafka source via Ivy) under
# ${LAKEFEED_CACHE:-~/.cache/lakefeed}. A second run does nothing that is already done.
set -euo pipefail
cd "$(dirname "$0")/.."

say() { printf '[setup] %s\n' "$*"; }
SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"

# --- system packages -------------------------------------------------------------------------
missing=()
command -v mariadbd >/dev/null 2>&1 || [ -x /usr/sbin/mariadbd ] || missing+=(mariadb-server)
command -v kcat >/dev/null 2>&1 || missing+=(kcat)
command -v mvn >/dev/null 2>&1 || missing+=(maven)
# the console's browser test (tests/changefeed/lifecycle/test_console_browser.py) drives Debian's Chromium
command -v chromium >/dev/null 2>&1 || missing+=(chromium)
command -v chromedriver >/dev/null 2>&1 || missing+=(chromium-driver)
if ! command -v java >/dev/null 2>&1 || ! java -version 2>&1 | grep -qE 'version "(1[7-9]|2[0-9])'; then
  missing+=(openjdk-17-jdk-headless)
fi
if [ ${#missing[@]} -gt 0 ]; then
  say "installing Debian packages: ${missing[*]}"
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get update -qq
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# --- python environment ----------------------------------------------------------------------
PYTHON=${PYTHON:-python3.11}
command -v "$PYTHON" >/dev/null 2>&1 || PYTHON=python3
stamp=".venv/.lakefeed-installed"
want=$(sha256sum pyproject.toml | cut -c1-16)
if [ ! -x .venv/bin/python ]; then
  say "creating .venv with $($PYTHON --version)"
  "$PYTHON" -m venv .venv
fi
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  say "installing lakefeed[dev] into .venv"
  .venv/bin/pip install -q --upgrade pip
  .venv/bin/pip install -q -e '.[dev]'
  echo "$want" > "$stamp"
fi

# --- jar caches ------------------------------------------------------------------------------
cache="${LAKEFEED_CACHE:-$HOME/.cache/lakefeed}"
mkdir -p "$cache"
warm_key=$(cat pyproject.toml lakefeed_testing/kafka_reference/pom.xml lakefeed_testing/flink_canal/pom.xml \
  lakefeed_testing/spark.py | sha256sum | cut -c1-16)
if [ ! -e "$cache/warm-$warm_key" ]; then
  say "warming jar caches in $cache (first run downloads from Maven Central)"
  .venv/bin/python -m lakefeed_testing.warm
  touch "$cache/warm-$warm_key"
fi
say "ready"
