"""The change buffer of merge-on-read (io/change_buffer.py) on real Delta: what the merge reads of it stays what
it read while the stream appends."""

from pathlib import Path
from typing import Any

from spark_pipelines.io.change_buffer import ChangeBuffer


def _cache_builder(spark: Any, frame: Any) -> int | None:
    """The identity of the cache entry Spark's cache manager holds for `frame`'s plan (None: not cached).
    Spark replaces it when it rebuilds the entry."""
    found = spark._jsparkSession.sharedState().cacheManager().lookupCachedData(frame._jdf)
    return int(found.get().cachedRepresentation().cacheBuilder().hashCode()) if found.isDefined() else None


def test_an_append_leaves_a_merges_cached_read_of_the_buffer_as_it_was(spark: Any, tmp_path: Path) -> None:
    """The merge caches the messages it takes for its several actions; an append of the stream meanwhile must
    neither re-plan that read (Spark rebuilds every cached read of a table a DataFrameWriter writes: on a
    buffer read that follows the newest version each such append cost 0.2 -> 0.7 s) nor change what it holds."""
    buffer = ChangeBuffer(str(tmp_path / "buffer"), 10, "app")
    messages = spark.createDataFrame([(True, False, "shop.users", i) for i in range(3)],
                                     "valid boolean, is_ddl boolean, table string, n int")
    for batch in range(3):
        buffer.append(spark, messages, batch)
    pending = buffer.pending(spark, 2)
    assert pending is not None
    taken = pending.persist()
    try:
        assert taken.count() == 9
        before = _cache_builder(spark, taken)
        assert before is not None
        buffer.append(spark, messages, 3)
        assert _cache_builder(spark, taken) == before, "the append rebuilt the merge's cached read"
        assert taken.count() == 9
    finally:
        taken.unpersist()
    everything = buffer.pending(spark, 3)
    assert everything is not None and everything.count() == 12, "a read after the append sees it"
