"""Binlog housekeeping for tests on the session MariaDB."""

import time

from lakefeed_testing import MySQLServer


def purge_all_but_a_new_binlog(mysql: MySQLServer) -> list[str]:
    """FLUSH, then PURGE up to the new file; the names before the purge. MariaDB keeps a file until its
    Binlog_checkpoint event is written (asynchronously), so the purge is repeated until it took."""
    with mysql.connect() as conn, conn.cursor() as cur:
        cur.execute("FLUSH BINARY LOGS")
        cur.execute("SHOW BINARY LOGS")
        files = [str(r[0]) for r in cur.fetchall()]
        deadline = time.monotonic() + 20
        while True:
            cur.execute("PURGE BINARY LOGS TO %s", (files[-1],))
            cur.execute("SHOW BINARY LOGS")
            if len(cur.fetchall()) == 1:
                return files
            assert time.monotonic() < deadline, "MariaDB did not purge the old binlogs"
            time.sleep(0.2)
