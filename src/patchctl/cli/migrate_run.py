"""`migrate`, without click: what ``patchctl migrate`` runs once its options are read.

click reads the options of ``patchctl migrate`` (:mod:`patchctl.cli.migrate_cmd`), and so does
:mod:`patchctl.cli.quick` for the plain command lines, without loading click (issue 39.13: a
no-change re-run is measured against rsync's, and click with the command group was a tenth of
migrate's own start); both call :func:`run`, so the two print the same. Nothing here imports click.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from patchctl.cli import render
from patchctl.cli.echo import echo
from patchctl.clusters import load_cluster
from patchctl.migrate.options import Options, limit_hosts
from patchctl.migrate.session import start

# Only what parsing needs and what starts the logins is imported above: the rest (the live
# view, the report, the source check) loads inside run, while the hosts log in.
if TYPE_CHECKING:
    from patchctl import lock
    from patchctl.migrate.results import MigrateResult
    from patchctl.migrate.source import SourceCheck
    from patchctl.patchsets.model import Patchset
    from patchctl.target import Target


def run(
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
    hold: Callable[[lock.Held], lock.Held] | None = None,
) -> int:
    """Send ``target`` to every host of ``cluster`` and verify it there, print the report, return
    the exit code. ``hold`` keeps the tree's lock until the command ends (see
    :func:`~patchctl.cli.targets.open_target`)."""
    spec = limit_hosts(load_cluster(cluster, config), hosts)
    nodes: tuple[str, ...] = ()
    if slurm_nodes or spec.slurm is not None:  # an ssh cluster's migrate loads no Slurm code
        from patchctl.slurm import confirm

        nodes = confirm.node_list(slurm_nodes)
    options = Options(dry_run=dry_run, delete=delete, checksum=checksum, jobs=jobs)
    with start(spec, options) as session:  # the hosts log in while the rest loads
        # imported here, not at the top, so that loading them overlaps the logins
        from patchctl.cli.targets import open_target

        tree = open_target(target, config, hold=hold)
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
    echo(f"{result.source} at {(result.commit or 'no commit')[:12]}: {result.files} files")
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
                echo(f"{h.host}: {render.printable(h.reason)}")
    for h in result.hosts:
        if h.mismatches:
            echo(f"\n{h.host}: what differs on the host")
            for m in h.mismatches:
                echo(f"  {m}")
        if h.changes:
            summary.show(h.host, h.changes, Path(result.source), full)
        if h.repaired:
            echo(f"\n{h.host}: repaired {len(h.repaired)} file(s) that differed there (re-sent by content)")
            for r in h.repaired:
                echo(f"  {r}")
        if h.deleted:
            echo(f"\n{h.host}: deleted {len(h.deleted)} file(s) removed at the source")
            for d in h.deleted:
                echo(f"  {render.quote_path(d)}")
    bad = result.failed
    if not bad:
        verb = "planned" if result.dry_run else "ok and verified"
        repaired = sum(1 for h in result.hosts if h.repaired)
        note = f" ({repaired} repaired)" if repaired else ""
        echo(
            f"migrate {result.cluster}: {len(result.hosts)}/{len(result.hosts)} hosts {verb}{note}; "
            f"{_source_words(source, result.dry_run)}"
        )
    else:
        echo(f"migrate {result.cluster}: {len(bad)} of {len(result.hosts)} host(s) failed", err=True)
        for h in bad:
            echo(f"  {h.host}: {h.status.value}: {h.reason}", err=True)


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
    echo(f"warning: {tree.root} {why}; it {'would be' if dry_run else 'is'} sent as it is", err=True)
    return source
