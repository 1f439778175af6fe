"""The `spark-pipeline` command line."""

import click


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="lakefeed", prog_name="spark-pipeline")
def main() -> None:
    """Spark jobs that apply canal-JSON topics to Delta tables."""
