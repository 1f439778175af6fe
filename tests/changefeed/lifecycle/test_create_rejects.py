"""Bad configs and bad URIs are rejected at create with clear messages, and nothing is half-created."""

from pathlib import Path

import pytest

from lakefeed_testing import MySQLServer
from tests.changefeed.lifecycle.conftest import Process, StartServer, cli, cli_json, source_uri, wait_for


@pytest.fixture
def server(start_server: StartServer) -> Process:
    return start_server()


def test_bad_definitions_are_rejected_and_nothing_is_stored(
    mysql: MySQLServer, database: str, broker: Process, server: Process, tmp_path: Path
) -> None:
    good_source, good_sink = source_uri(mysql), f"kafka://{broker.bootstrap}/t-{database}"
    bad_config = tmp_path / "bad.yaml"
    bad_config.write_text("sink:\n  dispatchers:\n    - matcher: ['a.*']\n      partition: bogus\n")
    cases = [
        (["--source", good_source, "--sink-uri", good_sink, "--config", str(bad_config)],
         ["sink.dispatchers[0].partition", "'bogus'", "allowed"]),
        (["--source", good_source, "--sink-uri", "kafka://127.0.0.1/topic"], ["not host:port"]),
        (["--source", good_source, "--sink-uri", f"kafka://{broker.bootstrap}/t?compression=brotli"],
         ["compression", "allowed"]),
        (["--source", "postgres://u:p@h:5432", "--sink-uri", good_sink], ["scheme must be mysql://"]),
        (["--source", good_source.replace(f":{mysql.port}", ":1"), "--sink-uri", good_sink],
         ["source 127.0.0.1:1", "connection"]),
        (["--source", f"mysql://{mysql.user}:wrong-password@{mysql.host}:{mysql.port}?tls=false",
          "--sink-uri", good_sink], ["Access denied"]),
        (["--source", good_source, "--sink-uri", good_sink, "--start", "yesterday"],
         ["start 'yesterday'", "FILE:POS"]),
        (["--source", good_source, "--sink-uri", good_sink, "--target", "2001-01-01T00:00:00"],
         ["not in the future"]),
        (["--source", good_source, "--sink-uri", f"kafka://{broker.bootstrap}/t?replication-factor=3"],
         ["replication"]),
    ]
    for args, expected in cases:
        result = cli(server, "create", "--changefeed-id", "bad", *args, output="table")
        assert result.returncode == 1, (args, result.returncode, result.stderr)
        for part in expected:
            assert part in result.stderr, (args, result.stderr)
        assert cli_json(server, "list", "--all") == [], f"{args} left a changefeed behind"

    bad_id = cli(server, "create", "--changefeed-id", "no spaces!", "--source", good_source,
                 "--sink-uri", good_sink)
    assert bad_id.returncode == 1 and "changefeed id" in bad_id.stderr
    cli_json(server, "create", "--changefeed-id", "ok", "--source", good_source, "--sink-uri", good_sink)
    duplicate = cli(server, "create", "--changefeed-id", "ok", "--source", good_source, "--sink-uri", good_sink)
    assert duplicate.returncode == 4 and "already exists" in duplicate.stderr
    missing = cli(server, "pause", "--changefeed-id", "nope")
    assert missing.returncode == 3
    unreachable = cli("http://127.0.0.1:1", "list")
    assert unreachable.returncode == 5 and "cannot reach" in unreachable.stderr
    cli_json(server, "remove", "-c", "ok")


def test_a_source_password_from_a_file_on_the_server_is_never_stored(
    mysql: MySQLServer, database: str, broker: Process, server: Process, tmp_path: Path
) -> None:
    """`?password-file=` keeps the secret out of the metadata database and the API; a missing file or a
    second way to give the password is refused at create naming it."""
    user, password = f"pw_{database}"[:60], "Zq9-never-stored-7Kx"
    mysql.execute(f"CREATE USER '{user}'@'%' IDENTIFIED BY '{password}'",
                  f"GRANT SELECT, RELOAD, REPLICATION SLAVE, REPLICATION CLIENT ON *.* TO '{user}'@'%'")
    secret = tmp_path / "cdc-password"
    secret.write_text(password + "\n")
    sink = f"kafka://{broker.bootstrap}/pw-{database}"
    by_file = f"mysql://{user}@{mysql.host}:{mysql.port}?tls=false&password-file={secret}"
    created = cli_json(server, "create", "--changefeed-id", "pw", "--source", by_file, "--sink-uri", sink)
    assert created["source"] == by_file  # validated by connecting with the file's password
    wait_for(lambda: cli_json(server, "query", "-c", "pw")["state"] == "normal", 30, "the changefeed running")
    stored = (tmp_path / "s1" / "metadata.db").read_bytes()
    assert password.encode() not in stored and b"password-file" in stored
    for args, expected in [
        (f"mysql://{mysql.user}@{mysql.host}:{mysql.port}?password-file={tmp_path / 'nope'}",
         "password-file=" + str(tmp_path / "nope") + ": cannot read it on the changefeed server's host"),
        (f"mysql://{mysql.user}@{mysql.host}:{mysql.port}?password-env=LAKEFEED_TEST_UNSET_PW",
         "environment has no LAKEFEED_TEST_UNSET_PW"),
        (f"mysql://{mysql.user}:x@{mysql.host}:{mysql.port}?password-file={secret}", "give the password one way"),
    ]:
        refused = cli(server, "create", "--changefeed-id", "bad", "--source", args, "--sink-uri", sink)
        assert refused.returncode == 1 and expected in refused.stderr, refused.stderr
    cli_json(server, "remove", "-c", "pw")
    mysql.execute(f"DROP USER '{user}'@'%'")
