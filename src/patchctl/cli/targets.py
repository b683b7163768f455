"""``--target`` for the commands: resolve it, lock it, then make the tree whole before anything reads it."""

from __future__ import annotations

import errno
import os
from collections.abc import Callable
from enum import Enum
from pathlib import Path

from patchctl import journal_paths, lock
from patchctl.cli.echo import echo
from patchctl.target import Target, resolve


class Use(Enum):
    """How a command uses its tree, and so which lock it holds for as long as it runs."""

    #: apply, revert: the exclusive lock, from before the recovery until the command ends
    WRITE = "write"
    #: verify, migrate: the shared lock (no writer meanwhile), exclusive only for a recovery
    READ = "read"
    #: train, verify --env: the exclusive lock for a recovery only (a run of hours must not
    #: keep apply waiting)
    RECOVER = "recover"


def open_target(
    spec: str, config: Path | None = None, use: Use = Use.READ, hold: Callable[[lock.Held], lock.Held] | None = None
) -> Target:
    """Resolve ``spec``, lock it as ``use`` says for the rest of the click command, and finish or
    roll back a change a killed patchctl left there, saying which.

    ``hold`` keeps the lock until the command ends: the click context's ``with_resource`` unless
    given (``verify``'s start without click passes its own exit stack's ``enter_context``).

    Every command that reads a tree goes through here, so a tree interrupted half-way is never
    verified, patched, migrated or trained on as it is, and a change still being written by a
    live patchctl is never taken for an interrupted one: recovery runs under the exclusive lock,
    which that writer holds until it is done.
    """
    tree = resolve(spec, config)
    root = tree.root
    if hold is None:
        import click

        hold = click.get_current_context().with_resource
    if use is Use.WRITE:
        hold(_lock(root, shared=False))
        _recover(root)
        return tree
    for _ in range(3):  # a writer killed between our recovery and our shared lock: once more
        if (root / journal_paths.JOURNAL_DIR).exists():
            with _lock(root, shared=False):
                _recover(root)
        if use is Use.RECOVER:
            return tree
        held = hold(_lock(root, shared=True))
        if not (root / journal_paths.JOURNAL_DIR / journal_paths.JOURNAL_FILE).exists():
            return tree
        held.release()
    return tree


def _lock(root: Path, shared: bool) -> lock.Held:
    """The tree's lock; a no-op one for a tree this user cannot create a file in (nothing can be
    written there through patchctl either, and a read-only checkout must stay verifiable)."""
    try:
        return lock.hold(lock.path_for(root), shared=shared, what=root)
    except OSError as exc:
        if exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
            return lock.Held(lock.path_for(root), -1)
        raise


def _recover(root: Path) -> None:
    if not os.path.lexists(root / journal_paths.JOURNAL_DIR):
        return  # nothing there, not even a link or a file in the way: recovery would say nothing
    # here, not at the top: a tree with a journal to recover is rare, and apply pays for it first
    from patchctl import recovery

    done = recovery.recover(root)
    if done is not None:
        echo(done.sentence(root), err=True)
