"""`python -m lakefeed_testing.warm`: fill the persistent caches (Kafka and Flink canal-json jars via
Maven, Delta and Kafka-source jars via Ivy) so later runs download nothing. Safe to run again: cached
parts are skipped."""

import sys
import time

from lakefeed_testing.flink_canal import FLINK_VERSION, ensure_flink_libs
from lakefeed_testing.kafka_reference import KAFKA_VERSION, ensure_kafka_libs
from lakefeed_testing.paths import ivy_dir
from lakefeed_testing.spark import build_spark_session


def main() -> int:
    started = time.monotonic()
    print(f"[warm] Apache Kafka {KAFKA_VERSION} jars ...", flush=True)
    libs = ensure_kafka_libs()
    print(f"[warm]   {sum(1 for _ in libs.glob('*.jar'))} jars in {libs}", flush=True)
    print(f"[warm] Apache Flink {FLINK_VERSION} canal-json format jars ...", flush=True)
    flink = ensure_flink_libs()
    print(f"[warm]   {sum(1 for _ in flink.glob('*.jar'))} jars in {flink}", flush=True)
    print(f"[warm] Spark packages (Delta, Kafka source) into {ivy_dir()} ...", flush=True)
    spark = build_spark_session("lakefeed-warm")
    spark.range(1).count()
    spark.stop()
    print(f"[warm] done in {time.monotonic() - started:.0f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
