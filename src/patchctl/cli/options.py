"""Click options shared by several commands, declared once."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from patchctl.cli import completion
from patchctl.errors import did_you_mean


class NonEmptyPath(click.Path):
    """``click.Path`` that refuses ``''``: click reads it as ``.``, so ``capture --out ''`` named
    the current folder (which capture then replaces with a patchset)."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if value == "":
            self.fail(EMPTY, param, ctx)
        return super().convert(value, param, ctx)


class NonEmptyText(click.ParamType):  # type: ignore[type-arg] # generic in click 8.5, not in the 8.1 we support
    """A path or a spec naming one (``--target``, ``--base``, ``--patchset``), which cannot be ``''``."""

    name = "text"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if value == "":
            self.fail(EMPTY, param, ctx)
        return value


class Choice(click.Choice):  # type: ignore[type-arg] # generic in click 8.5, not in the 8.1 we support
    """``click.Choice`` that names the closest choice to a mistyped value ("did you mean ...")."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        try:
            return super().convert(value, param, ctx)
        except click.BadParameter as exc:
            hint = did_you_mean(str(value), [str(c) for c in self.choices])
            if not hint:
                raise
            raise click.BadParameter(exc.message.rstrip(".") + hint + ".", ctx=ctx, param=param) from None


EMPTY = "an empty path names nothing; pass a path (. is the current folder)"
SPEC = NonEmptyText()

target_option = click.option(
    "--target",
    "-t",
    "target",
    default=".",
    show_default=True,
    type=SPEC,
    shell_complete=completion.targets,
    help="A verl checkout (default: the one around the current folder, searched upward as git does), "
    "a source release such as verl==0.6.1, or a name from patchctl.toml [targets].",
)
F = TypeVar("F", bound=Callable[..., Any])


def patchsets_option(default: str) -> Callable[[F], F]:
    """``--patchset/-p``, repeatable; ``default`` says what a command takes without it."""
    return click.option(
        "--patchset",
        "-p",
        "patchsets",
        multiple=True,
        type=SPEC,
        shell_complete=completion.patchsets,
        help=f"A built-in patchset name or a patchset directory (repeatable). Default: {default}.",
    )


patchset_option = patchsets_option("uky")
only_option = click.option(
    "--only", "only", multiple=True, shell_complete=completion.patch_ids, help="Only this patch id (repeatable)."
)
json_option = click.option("--json", "as_json", is_flag=True, help="Print a JSON object instead of a table.")
config_option = click.option(
    "--config",
    "config",
    type=NonEmptyPath(path_type=Path, dir_okay=False),
    default=None,
    is_eager=True,  # read first, so that completing a cluster or target name can use it
    help="Config file (default: ./patchctl.toml, then ~/.config/patchctl/config.toml).",
)
