"""Shell completion: ``patchctl completion bash|zsh|fish`` prints the script to source.

click already ships the machinery (its scripts call ``patchctl`` back with
``_PATCHCTL_COMPLETE`` set), so no new dependency: this module prints that script and supplies
the values click cannot know, read from the config and the patchsets: cluster names, target
names, patch ids and built-in patchsets. Profiles are ``click.Choice`` and complete by themselves.

A completer never raises and never prints: a broken config must not spill a traceback into the
user's prompt, so it completes nothing instead.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import click
from click.shell_completion import CompletionItem, get_completion_class

from patchctl.cli import COMPLETE_VAR
from patchctl.errors import PatchctlError

#: what ``completion`` accepts; click has a class for each
SHELLS = ("bash", "zsh", "fish")


def _config(ctx: click.Context) -> Path | None:
    value = ctx.params.get("config")
    return Path(value) if value else None


def _matching(names: list[str], incomplete: str) -> list[CompletionItem]:
    return [CompletionItem(n) for n in sorted(names) if n.startswith(incomplete)]


def _safe(find: Callable[[click.Context], list[str]]) -> Callable[..., list[CompletionItem]]:
    def complete(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[CompletionItem]:
        try:
            return _matching(find(ctx), incomplete)
        except (PatchctlError, OSError, ValueError):
            return []

    return complete


def _clusters(ctx: click.Context) -> list[str]:
    from patchctl import config

    return list(config.load(_config(ctx)).clusters)


def _targets(ctx: click.Context) -> list[str]:
    from patchctl import config

    return list(config.load(_config(ctx)).targets)


def _patch_ids(ctx: click.Context) -> list[str]:
    from patchctl.patchsets.loader import load_patchsets

    return [p.id for ps in load_patchsets(tuple(ctx.params.get("patchsets") or ())) for p in ps.patches]


def _patchsets(ctx: click.Context) -> list[str]:
    from patchctl.patchsets.loader import builtin_names

    return builtin_names()


clusters = _safe(_clusters)
patch_ids = _safe(_patch_ids)
patchsets = _safe(_patchsets)
_target_names = _safe(_targets)


def targets(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[CompletionItem]:
    """``[targets]`` names, then directories (the shell's own completion of paths)."""
    return [*_target_names(ctx, param, incomplete), CompletionItem(incomplete, type="dir")]


@click.command("completion")
@click.argument("shell", type=click.Choice(SHELLS))
def completion_cmd(shell: str) -> None:
    """Print the shell completion script for SHELL; source it from your shell's start-up file.

    It completes commands, options, cluster names, [targets] names, patch ids (--only), built-in
    patchsets and profiles.

    \b
    bash:  echo 'eval "$(patchctl completion bash)"' >> ~/.bashrc
    zsh:   echo 'eval "$(patchctl completion zsh)"' >> ~/.zshrc
    fish:  patchctl completion fish > ~/.config/fish/completions/patchctl.fish
    """
    root = click.get_current_context().find_root().command  # the patchctl group, whose commands complete
    cls = get_completion_class(shell)
    assert cls is not None, shell  # every name of SHELLS has a class in click
    click.echo(cls(root, {}, "patchctl", COMPLETE_VAR).source())
