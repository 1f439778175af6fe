"""A MySQL-compatible server with row-based binlog, for tests, benchmarks and the demo.

Order of preference: `MYSQL_URL` (an existing server), testcontainers MySQL 8 when a Docker engine
answers, else a private `mariadbd` from the Debian package in a temp dir on a free loopback port.
"""

import contextlib
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlparse

import pymysql

from lakefeed_testing.errors import ServiceError
from lakefeed_testing.net import free_port, wait_until

REPLICATION_USER = "lakefeed"
REPLICATION_PASSWORD = "lakefeed"

BINLOG_SETTINGS = (
    "--log-bin=binlog",
    "--binlog-format=ROW",
    "--binlog-row-image=FULL",
    "--binlog-row-metadata=FULL",
    "--server-id=1",
)


@dataclass(frozen=True)
class MySQLServer:
    host: str
    port: int
    user: str
    password: str
    flavor: str  # "mariadb" or "mysql"

    @property
    def url(self) -> str:
        return f"mysql://{self.user}:{self.password}@{self.host}:{self.port}"

    def connect(self, database: str | None = None, autocommit: bool = True) -> pymysql.Connection:
        return pymysql.connect(
            host=self.host,
            port=self.port,
            user=self.user,
            password=self.password,
            database=database,
            autocommit=autocommit,
            charset="utf8mb4",
        )

    def execute(self, *statements: str, database: str | None = None) -> None:
        with self.connect(database) as conn, conn.cursor() as cur:
            for statement in statements:
                cur.execute(statement)


@contextlib.contextmanager
def mysql_server() -> Iterator[MySQLServer]:
    """Yield a running server with binlog settings and a replication user; clean up afterwards."""
    url = os.environ.get("MYSQL_URL")
    if url:
        yield _from_url(url)
    elif docker_available():
        with mysql_container() as server:
            yield server
    else:
        with _local_mariadb() as server:
            yield server


def _from_url(url: str) -> MySQLServer:
    parsed = urlparse(url)
    if parsed.scheme != "mysql" or not parsed.hostname:
        raise ServiceError(f"MYSQL_URL={url!r} is not of the form mysql://user:password@host:port")
    server = MySQLServer(
        host=parsed.hostname,
        port=parsed.port or 3306,
        user=unquote(parsed.username or "root"),
        password=unquote(parsed.password or ""),
        flavor="mysql",
    )
    with server.connect() as conn, conn.cursor() as cur:
        cur.execute("SELECT VERSION()")
        row = cur.fetchone()
    flavor = "mariadb" if row and "mariadb" in str(row[0]).lower() else "mysql"
    return MySQLServer(server.host, server.port, server.user, server.password, flavor)


def docker_available() -> bool:
    """True when a Docker engine answers `docker info` (testcontainers needs one)."""
    if shutil.which("docker") is None:
        return False
    try:
        return subprocess.run(["docker", "info"], capture_output=True, timeout=5).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


@contextlib.contextmanager
def mysql_container(image: str = "mysql:8.4", as_root: bool = False) -> Iterator[MySQLServer]:
    """A MySQL server in a testcontainers container with the binlog settings; yields the test user
    (every privilege, MySQL's default caching_sha2_password authentication), or root."""
    from testcontainers.community.mysql import MySqlContainer

    container = MySqlContainer(image, username=REPLICATION_USER, password=REPLICATION_PASSWORD)
    container.with_command(" ".join(BINLOG_SETTINGS))
    with container:
        port = int(container.get_exposed_port(3306))
        root = MySQLServer(container.get_container_host_ip(), port, "root", container.root_password, "mysql")
        _create_replication_user(root)
        yield root if as_root else MySQLServer(root.host, port, REPLICATION_USER, REPLICATION_PASSWORD, "mysql")


def _find_binary(*names: str) -> str:
    for name in names:
        for candidate in (shutil.which(name), f"/usr/sbin/{name}", f"/usr/bin/{name}"):
            if candidate and Path(candidate).exists():
                return candidate
    raise ServiceError(
        f"none of {', '.join(names)} found: install MariaDB with `apt-get install mariadb-server` "
        "(scripts/setup.sh does it) or set MYSQL_URL to an existing server"
    )


class LocalMariaDB:
    """A private MariaDB with row binlog under a temporary directory, on a free port of 127.0.0.1; it can be
    killed -9 and started again on the same data directory and port (crash recovery, as after a power loss
    or an OOM kill), so tests can restart the source under a running changefeed."""

    def __init__(self) -> None:
        self.mariadbd = _find_binary("mariadbd", "mysqld")
        install_db = _find_binary("mariadb-install-db", "mysql_install_db")
        self.workdir = Path(tempfile.mkdtemp(prefix="lakefeed-mariadb-"))
        self.datadir, self.log = self.workdir / "data", self.workdir / "error.log"
        self.port = free_port()
        self.user_args = ["--user=root"] if os.geteuid() == 0 else []
        init = subprocess.run(
            [install_db, "--no-defaults", f"--datadir={self.datadir}", "--auth-root-authentication-method=normal",
             "--skip-test-db", *self.user_args],
            capture_output=True, text=True, timeout=120,
        )
        if init.returncode != 0:
            shutil.rmtree(self.workdir, ignore_errors=True)
            raise ServiceError(f"mariadb-install-db failed ({init.returncode}): {init.stderr[-2000:]}")
        self.process: subprocess.Popen[bytes] | None = None
        self.server = MySQLServer("127.0.0.1", self.port, REPLICATION_USER, REPLICATION_PASSWORD, "mariadb")

    def start(self) -> MySQLServer:
        self.process = subprocess.Popen(
            [self.mariadbd, "--no-defaults", f"--datadir={self.datadir}", f"--socket={self.workdir / 'mysqld.sock'}",
             f"--port={self.port}", "--bind-address=127.0.0.1", f"--log-error={self.log}", "--skip-name-resolve",
             "--innodb-buffer-pool-size=256M", "--innodb-flush-log-at-trx-commit=2", "--max-connections=500",
             f"--log-bin={self.datadir}/binlog", *BINLOG_SETTINGS[1:], *self.user_args],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        root = MySQLServer("127.0.0.1", self.port, "root", "", "mariadb")
        process = self.process
        wait_until(lambda: _answers(root), timeout=120, what=f"mariadbd on port {self.port} (log: {self.log})",
                   alive=lambda: process.poll() is None)
        _create_replication_user(root)
        return self.server

    def kill(self) -> None:
        """kill -9: what is committed survives (InnoDB redo and the binlog are recovered at the next start)."""
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=30)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()

    def close(self) -> None:
        self.stop()
        shutil.rmtree(self.workdir, ignore_errors=True)


@contextlib.contextmanager
def _local_mariadb() -> Iterator[MySQLServer]:
    database = LocalMariaDB()
    try:
        yield database.start()
    finally:
        database.close()


def _answers(server: MySQLServer) -> bool:
    try:
        with server.connect():
            return True
    except pymysql.MySQLError:
        return False


def _create_replication_user(root: MySQLServer) -> None:
    # The changefeed user needs REPLICATION SLAVE/CLIENT and SELECT; tests also create databases.
    root.execute(
        f"CREATE USER IF NOT EXISTS '{REPLICATION_USER}'@'%' IDENTIFIED BY '{REPLICATION_PASSWORD}'",
        f"GRANT ALL PRIVILEGES ON *.* TO '{REPLICATION_USER}'@'%' WITH GRANT OPTION",
        "FLUSH PRIVILEGES",
    )
