"""Click options shared by several commands, declared once."""

from __future__ import annotations

from pathlib import Path

import click

target_option = click.option(
    "--target", "-t", "target", default=".", show_default=True,
    help="A verl checkout, a source release such as verl==0.6.1, or a name from patchctl.toml [targets].",
)
patchset_option = click.option(
    "--patchset", "-p", "patchsets", multiple=True,
    help="A built-in patchset name or a patchset directory (repeatable). Default: uky.",
)
only_option = click.option("--only", "only", multiple=True, help="Only this patch id (repeatable).")
json_option = click.option("--json", "as_json", is_flag=True, help="Print a JSON object instead of a table.")
config_option = click.option(
    "--config", "config", type=click.Path(path_type=Path, dir_okay=False), default=None,
    help="Config file (default: ./patchctl.toml, then ~/.config/patchctl/config.toml).",
)
