"""The `changefeed` command line."""

import click


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="lakefeed", prog_name="changefeed")
def main() -> None:
    """Run and control changefeeds (MySQL binlog -> canal-JSON -> Kafka)."""
