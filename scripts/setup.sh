#!/usr/bin/env bash
# One idempotent setup for both README commands: system packages, .venv with the project and its
# dev extras, and warm jar caches (Kafka and Flink via Maven, Delta + Kafka source via Ivy) under
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
# javac: the Kafka Streams app of tests/broker/test_kafka_streams_eos.py is compiled on first use
if ! command -v java >/dev/null 2>&1 || ! java -version 2>&1 | grep -qE 'version "(1[7-9]|2[0-9])' \
    || ! command -v javac >/dev/null 2>&1; then
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
# Setups before this one ran Maven with ~/.m2 as its local repository and left a bare jsr305 .pom there;
# Spark's default Ivy chain (used by the `spark-pipelines` Connect server) looks in ~/.m2 first, finds the
# .pom without its jar and fails. Maven now uses "$cache/m2" (lakefeed_testing/maven.py); drop that one
# incomplete artifact (Maven fetches it again whenever a project of yours needs it).
m2_jsr305="$HOME/.m2/repository/com/google/code/findbugs/jsr305/3.0.2"
if [ -e "$m2_jsr305/jsr305-3.0.2.pom" ] && [ ! -e "$m2_jsr305/jsr305-3.0.2.jar" ]; then
  rm -rf "$m2_jsr305"
fi
if [ ! -e "$cache/warm-$warm_key" ]; then
  say "warming jar caches in $cache (first run downloads from Maven Central)"
  .venv/bin/python -m lakefeed_testing.warm
  touch "$cache/warm-$warm_key"
fi
# --- Go modules ------------------------------------------------------------------------------
# tests/broker/franz_txn (franz-go's transactions against our broker and Kafka) and tests/broker/sarama_client
# (Sarama and segmentio/kafka-go against both) are built by their tests offline (GOPROXY=off) from the module
# cache filled here; `go mod download` checks go.sum and does nothing when cached.
if ! command -v go >/dev/null 2>&1; then
  echo "[setup] error: 'go' is not on PATH; tests/broker/franz_txn needs a Go toolchain (go.mod's go version or newer)" >&2
  exit 1
fi
(cd tests/broker/franz_txn && GOFLAGS=-mod=readonly go mod download)
(cd tests/broker/sarama_client && GOFLAGS=-mod=readonly go mod download)

# --- Node modules ----------------------------------------------------------------------------
# tests/broker/kafkajs_client (KafkaJS against our broker and Kafka) runs with node from the node_modules
# installed here from its package-lock.json; the test itself never runs npm.
if ! command -v npm >/dev/null 2>&1 || ! command -v node >/dev/null 2>&1; then
  echo "[setup] error: 'node' and 'npm' must be on PATH; tests/broker/kafkajs_client needs Node.js 18 or newer" >&2
  exit 1
fi
kafkajs_dir=tests/broker/kafkajs_client
node_stamp="$kafkajs_dir/node_modules/.lakefeed-installed"
node_want=$(sha256sum "$kafkajs_dir/package-lock.json" | cut -c1-16)
if [ "$(cat "$node_stamp" 2>/dev/null)" != "$node_want" ]; then
  say "installing node modules in $kafkajs_dir"
  (cd "$kafkajs_dir" && npm ci --no-audit --no-fund --loglevel=error)
  echo "$node_want" > "$node_stamp"
fi

say "ready"
