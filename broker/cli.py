"""The `broker` command line."""

import click


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="lakefeed", prog_name="broker")
def main() -> None:
    """The bundled Kafka-compatible broker."""
