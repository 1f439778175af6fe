"""The README's main-job command, on the shared test services: every Delta table ends equal to MySQL,
through the changefeed, our broker and the streaming job."""

import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

from lakefeed_testing import MySQLServer

QUICKSTART = Path(__file__).parents[2] / "examples" / "quickstart.py"


def _load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("quickstart", QUICKSTART)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules["quickstart"] = module
    spec.loader.exec_module(module)
    return module


def test_main_job_makes_delta_equal_to_mysql(mysql: MySQLServer, spark: Any, tmp_path: Path) -> None:
    quickstart = _load()
    mysql.execute("DROP DATABASE IF EXISTS shop")
    try:
        assert quickstart.run_main_job(mysql, spark, rows=600, workdir=tmp_path)
        for table in quickstart.TABLES:
            count = spark.read.format("delta").load(str(tmp_path / "delta" / "shop" / table)).count()
            assert count >= 600 - 600 // 25  # live rows plus tombstones of deleted and moved keys
    finally:
        mysql.execute("DROP DATABASE IF EXISTS shop")
