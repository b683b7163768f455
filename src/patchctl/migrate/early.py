"""A migrate's logins begun by the ``patchctl`` script itself, before the CLI is loaded.

An ssh login is the longest step of a small migrate (~0.18 s on loopback, mostly the host's
key exchange), and every host run waits for it. :mod:`patchctl.migrate.session` already starts
the logins before the patchsets and the tree are loaded, but only once click, the command group
and the migrate command are imported and have parsed the command line: some 50 ms after the
interpreter started, on every run. So the script reads ``patchctl migrate``'s command line
itself first (:func:`begin`), for the little the logins depend on: the cluster's name, the
config file, ``--host`` and ``--jobs``. The session the CLI opens afterwards takes those logins
over (:func:`take`) only if they were begun for exactly the cluster and jobs it asks for; in any
other case (an option this reader does not know, a bad config, a cluster the CLI reads otherwise)
they are closed and the CLI logs in itself, as it did before. Whatever is wrong with the command
line is left for the CLI to report, in its own words: this reader never fails and prints nothing.
"""

from __future__ import annotations

import atexit
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from patchctl.cli import COMPLETE_VAR  # completing a word must not log in anywhere
from patchctl.clusters import Cluster, load_cluster
from patchctl.migrate.options import limit_hosts
from patchctl.remote import ssh

#: ``patchctl migrate``'s options that take a value, by each spelling (cli.migrate_cmd)
VALUED = {
    **dict.fromkeys(("--target", "-t", "--patchset", "-p"), ""),
    **dict.fromkeys(("--jobs", "-j"), "jobs"),
    "--host": "host",
    "--config": "config",
}
#: its flags; ``--help`` is not one of them: a help text logs in nowhere
FLAGS = frozenset({"--dry-run", "--delete", "--checksum", "--allow-unverified", "--list", "--json"})


@dataclass(frozen=True)
class Asked:
    """What a migrate command line says about the logins."""

    cluster: str
    config: Path | None = None
    hosts: tuple[str, ...] = ()
    jobs: int | None = None


def read(argv: Sequence[str]) -> Asked | None:
    """The logins ``patchctl migrate ARGV`` asks for; None where the answer is not certain (an
    unknown option, --help, no cluster or two, a --jobs that is not a positive number), and then
    the CLI decides everything, as without this reader."""
    cluster: str | None = None
    config: Path | None = None
    hosts: list[str] = []
    jobs: int | None = None
    words = iter(argv)
    for word in words:
        if word.startswith("--"):
            name, eq, value = word.partition("=")
        elif word.startswith("-") and len(word) > 2:  # -j4, -tDIR: a short option's value attached
            name, eq, value = word[:2], "=", word[2:]
        else:
            name, eq, value = word, "", ""
        if name in FLAGS and not eq:
            continue
        if name in VALUED:
            if not eq:
                following = next(words, None)
                if following is None:
                    return None
                value = following
            kind = VALUED[name]
            if kind == "config":
                if not value:
                    return None
                config = Path(value)
            elif kind == "host":
                hosts.append(value)
            elif kind == "jobs":
                if not value.isdigit() or int(value) < 1:
                    return None
                jobs = int(value)
            continue
        if word.startswith("-") or cluster is not None:
            return None  # an option this reader does not know (--help, --), or a second positional
        cluster = word
    return Asked(cluster, config, tuple(hosts), jobs) if cluster is not None else None


_begun: tuple[Cluster, int | None, ssh.Connections] | None = None


def begin(argv: Sequence[str]) -> None:
    """Start logging in to the hosts ``patchctl migrate ARGV`` will need, if that is certain
    (see :func:`read`). Logins nobody takes over are closed when patchctl exits (and the kernel
    ends them if it is killed, as every master: :mod:`patchctl.proc`)."""
    global _begun
    if os.environ.get(COMPLETE_VAR) or _begun is not None:
        return
    asked = read(argv)
    if asked is None:
        return
    try:
        cluster = limit_hosts(load_cluster(asked.cluster, asked.config), asked.hosts)
    except Exception:  # any config problem is the CLI's to report, in its words, not this reader's
        return
    _begun = (cluster, asked.jobs, ssh.Connections(cluster, asked.jobs))
    atexit.register(_drop)


def take(cluster: Cluster, jobs: int | None) -> ssh.Connections | None:
    """The logins begun for exactly ``cluster`` and ``jobs``, handed over once; None (and any
    begun for something else closed) otherwise."""
    global _begun
    begun, _begun = _begun, None
    if begun is None:
        return None
    if begun[0] == cluster and begun[1] == jobs:
        return begun[2]
    begun[2].close()
    return None


def _drop() -> None:
    """At exit: close logins begun for a command that never took them over (a usage error)."""
    global _begun
    begun, _begun = _begun, None
    if begun is not None:
        begun[2].close()
