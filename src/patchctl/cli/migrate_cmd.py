"""`migrate`: send the patched tree to every host of a cluster, verify it there, show per host."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from patchctl.cli import cluster_keys, completion, render
from patchctl.cli.errors import handled
from patchctl.cli.options import config_option, json_option, patchset_option, target_option
from patchctl.clusters import load_cluster
from patchctl.migrate.options import Options, limit_hosts
from patchctl.migrate.session import start

# Only what parsing needs and what starts the logins is imported above: the rest (the live
# view, the report, the source check) loads inside migrate_cmd, while the hosts log in.
if TYPE_CHECKING:
    from patchctl.migrate.results import MigrateResult
    from patchctl.migrate.source import SourceCheck
    from patchctl.patchsets.model import Patchset
    from patchctl.target import Target


def _report(result: MigrateResult, source: SourceCheck, full: bool) -> None:
    from patchctl.cli import migrate_summary as summary
    from patchctl.cli.migrate_live import STATUS_STYLE
    from patchctl.cli.migrate_summary import human

    rows = [
        [
            h.host,
            h.status.value,
            str(h.files_sent),
            human(h.bytes_sent),
            f"{h.seconds:.2f}",
            "yes" if h.verified else "no",
            h.reason or "-",
        ]
        for h in result.hosts
    ]
    files_col = "would send" if result.dry_run else "files"
    # the source path stays out of the table's title: rich folds a title to the table's width
    click.echo(f"{result.source} at {(result.commit or 'no commit')[:12]}: {result.files} files")
    title = f"migrate {result.cluster}{' (dry run)' if result.dry_run else ''}"
    if render.table(
        title,
        ["host", "status", files_col, "bytes", "seconds", "verified", "reason"],
        rows,
        1,
        STATUS_STYLE,
        drop_to_fit=6,
    ):  # a reason folded into a narrow column reads badly: whole lines
        for h in result.hosts:
            if h.reason:
                click.echo(f"{h.host}: {render.printable(h.reason)}")
    for h in result.hosts:
        if h.mismatches:
            click.echo(f"\n{h.host}: what differs on the host")
            for m in h.mismatches:
                click.echo(f"  {m}")
        if h.changes:
            summary.show(h.host, h.changes, Path(result.source), full)
        if h.repaired:
            click.echo(f"\n{h.host}: repaired {len(h.repaired)} file(s) that differed there (re-sent by content)")
            for r in h.repaired:
                click.echo(f"  {r}")
        if h.deleted:
            click.echo(f"\n{h.host}: deleted {len(h.deleted)} file(s) removed at the source")
            for d in h.deleted:
                click.echo(f"  {render.quote_path(d)}")
    bad = result.failed
    if not bad:
        verb = "planned" if result.dry_run else "ok and verified"
        repaired = sum(1 for h in result.hosts if h.repaired)
        note = f" ({repaired} repaired)" if repaired else ""
        click.echo(
            f"migrate {result.cluster}: {len(result.hosts)}/{len(result.hosts)} hosts {verb}{note}; "
            f"{_source_words(source, result.dry_run)}"
        )
    else:
        click.echo(f"migrate {result.cluster}: {len(bad)} of {len(result.hosts)} host(s) failed", err=True)
        for h in bad:
            click.echo(f"  {h.host}: {h.status.value}: {h.reason}", err=True)


def _source_words(source: SourceCheck, dry_run: bool) -> str:
    """What the last line says of the source: "verified" above is the transfer, not the patches."""
    sent = "would be sent" if dry_run else "sent"
    if source.ok:
        return f"the source passes patchctl verify ({' + '.join(source.patchsets)})"
    if not source.patched:
        return f"the source carries none of the patches ({' + '.join(source.patchsets)}), {sent} as it is"
    return f"the source FAILS patchctl verify ({source.describe()}), {sent} as it is"


def _check_source(tree: Target, sets: list[Patchset], allow: bool, dry_run: bool) -> SourceCheck:
    """Refuse a patched tree that fails verify (unless ``allow``, or a dry run); warn otherwise."""
    from patchctl.migrate.errors import SourceFailsVerify
    from patchctl.migrate.source import check

    source = check(tree, sets)
    if source.ok:
        return source
    if source.patched and not (allow or dry_run):
        raise SourceFailsVerify(tree.root, source.describe())
    why = (
        f"fails patchctl verify ({source.describe()})"
        if source.patched
        else f"carries none of the patches ({' + '.join(source.patchsets)}: patchctl verify fails)"
    )
    click.echo(f"warning: {tree.root} {why}; it {'would be' if dry_run else 'is'} sent as it is", err=True)
    return source


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
    spec = limit_hosts(load_cluster(cluster, config), hosts)
    nodes: tuple[str, ...] = ()
    if slurm_nodes or spec.slurm is not None:  # an ssh cluster's migrate loads no Slurm code
        from patchctl.slurm import confirm

        nodes = confirm.node_list(slurm_nodes)
    options = Options(dry_run=dry_run, delete=delete, checksum=checksum, jobs=jobs)
    with start(spec, options) as session:  # the hosts log in while the rest loads
        # imported here, not at the top, so that loading them overlaps the logins
        from patchctl.cli.targets import open_target

        tree = open_target(target, config)
        session.look_at(tree.root)  # git lists the tree on other cores while the patchsets load
        from patchctl.patchsets.loader import load_patchsets

        sets = load_patchsets(patchsets)
        source = _check_source(tree, sets, allow_unverified, dry_run)
        from patchctl import progress
        from patchctl.cli.migrate_live import LiveTable, PlainLines

        if sys.stdout.isatty() and not as_json:
            with LiveTable(spec.name) as live:
                result = session.run(tree.root, sets, progress=live.update)
        else:
            with progress.step(f"migrate {spec.name}: hashing the tree, logging in") as shown:
                result = session.run(tree.root, sets, progress=PlainLines(spec.name, shown, not as_json).update)
    if spec.slurm is not None and not dry_run and result.ok:
        from patchctl.slurm import confirm

        with progress.step(f"migrate {spec.name}: the compute nodes confirm the tree (srun)"):
            result = confirm.extend(spec, result, nodes)
    if as_json:
        render.emit_json({**result.to_json(), "source_verify": source.to_json()})
    else:
        _report(result, source, full_list)
    return 0 if result.ok else 1
