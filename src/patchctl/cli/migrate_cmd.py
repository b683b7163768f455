"""`migrate`: send the patched tree to every host of a cluster, verify it there, show per host."""

from __future__ import annotations

from pathlib import Path

import click

from patchctl.cli import cluster_keys, completion
from patchctl.cli.errors import handled
from patchctl.cli.options import config_option, json_option, patchset_option, target_option

# What the command runs is in migrate_run (click-free: cli.quick runs it for a plain command line
# too); it is imported inside migrate_cmd, and the rest of migrate loads there while the hosts log in.


@click.command("migrate", epilog=cluster_keys.EPILOG)
@click.argument("cluster", shell_complete=completion.clusters)
@target_option
@patchset_option
@click.option(
    "--dry-run",
    is_flag=True,
    help="Show what would be sent, deleted and rendered on each host (a summary; "
    "--list for every file); change nothing.",
)
@click.option(
    "--delete",
    is_flag=True,
    help="Also remove from the hosts files deleted at the source (inside the root, at most max_delete).",
)
@click.option("--checksum", is_flag=True, help="Compare by content, not size and time (resends files altered there).")
@click.option(
    "--jobs", "-j", type=click.IntRange(min=1), default=None, metavar="N", help="Hosts at a time (default: all)."
)
@click.option(
    "--host",
    "hosts",
    multiple=True,
    metavar="NAME",
    help="Only this host of the cluster, as its hosts list spells it (repeatable): re-run a subset.",
)
@click.option(
    "--allow-unverified",
    is_flag=True,
    help="Send a patched tree although patchctl verify fails on it (say, a hand-edited patch).",
)
@click.option(
    "--list",
    "full_list",
    is_flag=True,
    help="With --dry-run: list every file to send, not the summary per top-level folder.",
)
@click.option(
    "--nodes",
    "slurm_nodes",
    default="",
    metavar="N1,N2",
    help="Slurm clusters: the compute nodes that confirm they see the tree (default: every node of the partition).",
)
@json_option
@config_option
@handled
def migrate_cmd(
    cluster: str,
    target: str,
    patchsets: tuple[str, ...],
    dry_run: bool,
    delete: bool,
    checksum: bool,
    jobs: int | None,
    hosts: tuple[str, ...],
    allow_unverified: bool,
    full_list: bool,
    slurm_nodes: str,
    as_json: bool,
    config: Path | None,
) -> int:
    """Send TARGET to every host of CLUSTER (rsync over ssh, in parallel) and verify it on each.

    CLUSTER names a table of the config file; every key it may hold is listed at the end.

    \b
      [clusters.gpu]
      hosts = ["node1", "user@10.0.0.2", { ssh = "node3", root = "/scratch/verl_Uky" }]
      root = "/root/verl_Uky"
      [clusters.gpu.paths]          # what git_ignore.py holds there
      DATA_DIR = "/data/fake_dataset"

    What is sent is the tree as git sees it: tracked files, untracked files git does not
    ignore, and the files the patchsets added; .git and run outputs (checkpoints/, outputs/,
    logs/, wandb/) stay here unless the cluster includes them. Each host also gets its
    git_ignore.py and .patchctl/env.sh rendered for the cluster, and .patchctl/provenance.json
    (commit, patchsets). Each host ends ok (verified by sha256 on the host), repaired (files
    that still differed there after the transfer were re-sent by content and verified; listed),
    mismatch (files listed), unreachable or failed (with the cause); the exit code is 1 unless
    every host is ok or repaired. Temp files and the journal of an interrupted patchctl write
    are never sent.

    The tree is checked with patchctl verify first: a patched tree that fails it (a hand-edited
    patch) is refused unless --allow-unverified; a tree with none of the patches is sent with a
    warning; the last line says which. --dry-run shows per host a summary (counts, bytes, the
    biggest top-level folders); --list shows every file.

    \b
    Examples:
      patchctl migrate gpu --target ~/verl_Uky
      patchctl migrate gpu --dry-run --delete
      patchctl migrate gpu --host node2 --host node3
      patchctl migrate gpu --json | jq '.hosts[] | {host, status, files_sent}'

    A Slurm cluster (scheduler = "slurm") gets the tree on its login node, then one srun step
    shows every compute node sees the same tree (a row per node, "NODE (srun)"); without
    shared_root the login node's tree reaches each node's own root by sbcast first.
    """
    if full_list and not dry_run:
        raise click.UsageError("--list shows a dry run's files: pass it with --dry-run")
    from patchctl.cli import migrate_run

    return migrate_run.run(
        cluster,
        target,
        patchsets,
        dry_run,
        delete,
        checksum,
        jobs,
        hosts,
        allow_unverified,
        full_list,
        slurm_nodes,
        as_json,
        config,
    )
