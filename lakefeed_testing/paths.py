"""Where downloaded jars and caches live: outside the repo, shared by every run on the machine.

The pipeline's own jar cache (spark_pipelines/packages.py) is the root: one `$LAKEFEED_CACHE` for the
product and the test services."""

from spark_pipelines.packages import cache_dir, ivy_dir

__all__ = ["cache_dir", "ivy_dir"]
