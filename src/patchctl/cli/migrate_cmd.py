"""`migrate`: send the patched tree to every host of a cluster, verify it there, show per host."""

from __future__ import annotations

import sys
from contextlib import nullcontext
from pathlib import Path
from typing import Any

import click

from patchctl.cli import render
from patchctl.cli.errors import handled
from patchctl.cli.options import config_option, json_option, patchset_option, target_option
from patchctl.clusters import load_cluster
from patchctl.migrate.results import MigrateResult, Phase, Progress
from patchctl.migrate.options import Options
from patchctl.migrate.session import start

STATUS_STYLE = {"ok": "green", "repaired": "yellow", "planned": "cyan", "mismatch": "red", "unreachable": "red",
                "failed": "red"}


def human(n: int) -> str:
    for unit in ("B", "kB", "MB", "GB"):
        if n < 1000 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000  # type: ignore[assignment]
    return str(n)


class LiveTable:
    """On a TTY: one live row per host (phase, files, bytes), redrawn as events arrive."""

    def __init__(self, cluster: str) -> None:
        from rich.live import Live

        self.cluster = cluster
        self.rows: dict[str, Progress] = {}
        self.live = Live(self._table(), console=render.console(), refresh_per_second=10, transient=True)

    def _table(self) -> Any:
        from rich.table import Table

        t = Table(title=f"migrate {self.cluster}", title_justify="left")
        for col in ("host", "phase", "files", "bytes", "where the time went"):
            t.add_column(col)
        for host, p in self.rows.items():
            phase = p.status.value if p.status else p.phase.value
            t.add_row(host, f"[{STATUS_STYLE.get(phase, 'white')}]{phase}[/]", str(p.files), human(p.bytes),
                      p.phases.describe() if p.phases else "")
        return t

    def update(self, event: Progress) -> None:
        self.rows[event.host] = event
        self.live.update(self._table())

    def __enter__(self) -> LiveTable:
        self.live.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self.live.__exit__(*exc)  # type: ignore[arg-type]


class PlainLines:
    """Not a TTY (CI logs, pipes): one line whenever a host changes phase."""

    def __init__(self) -> None:
        self.phase: dict[str, Phase] = {}

    def update(self, event: Progress) -> None:
        if event.phase is Phase.DONE and event.phases is not None:
            click.echo(f"{event.host}: done: {event.phases.describe()}")
        if self.phase.get(event.host) is event.phase or event.phase in (Phase.QUEUED, Phase.DONE):
            return
        self.phase[event.host] = event.phase
        sent = f" ({event.files} files, {human(event.bytes)} sent)" if event.phase is Phase.VERIFYING else ""
        click.echo(f"{event.host}: {event.phase.value}{sent}")


def _report(result: MigrateResult) -> None:
    rows = [[h.host, h.status.value, str(h.files_sent), human(h.bytes_sent), f"{h.seconds:.2f}",
             "yes" if h.verified else "no", h.reason or "-"] for h in result.hosts]
    files_col = "would send" if result.dry_run else "files"
    # the source path stays out of the table's title: rich folds a title to the table's width
    click.echo(f"{result.source} at {(result.commit or 'no commit')[:12]}: {result.files} files")
    title = f"migrate {result.cluster}{' (dry run)' if result.dry_run else ''}"
    render.table(title, ["host", "status", files_col, "bytes", "seconds", "verified", "reason"], rows, 1, STATUS_STYLE)
    for h in result.hosts:
        if h.mismatches:
            click.echo(f"\n{h.host}: what differs on the host")
            for m in h.mismatches:
                click.echo(f"  {m}")
        if h.changes:
            click.echo(f"\n{h.host}: would change ({len(h.changes)})")
            for c in h.changes:
                click.echo(f"  {c}")
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
        click.echo(f"migrate {result.cluster}: {len(result.hosts)}/{len(result.hosts)} hosts {verb}{note}")
    else:
        click.echo(f"migrate {result.cluster}: {len(bad)} of {len(result.hosts)} host(s) failed", err=True)
        for h in bad:
            click.echo(f"  {h.host}: {h.status.value}: {h.reason}", err=True)


@click.command("migrate")
@click.argument("cluster")
@target_option
@patchset_option
@click.option("--dry-run", is_flag=True, help="List what would be sent, deleted and rendered on each host; change "
              "nothing.")
@click.option("--delete", is_flag=True,
              help="Also remove from the hosts files deleted at the source (inside the root, at most max_delete).")
@click.option("--checksum", is_flag=True, help="Compare by content, not size and time (resends files altered there).")
@click.option("--jobs", "-j", type=click.IntRange(min=1), default=None, metavar="N",
              help="Hosts at a time (default: all).")
@json_option
@config_option
@handled
def migrate_cmd(cluster: str, target: str, patchsets: tuple[str, ...], dry_run: bool, delete: bool, checksum: bool,
                jobs: int | None, as_json: bool, config: Path | None) -> int:
    """Send TARGET to every host of CLUSTER (rsync over ssh, in parallel) and verify it on each.

    CLUSTER names a table of the config file; optional keys: ssh_config (ssh -F), profile
    (standard | fast-load), include, exclude, max_delete, bwlimit, timeout, python, env.

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

    \b
    Examples:
      patchctl migrate gpu --target ~/verl_Uky
      patchctl migrate gpu --dry-run --delete
      patchctl migrate gpu --json | jq '.hosts[] | {host, status, files_sent}'
    """
    spec = load_cluster(cluster, config)
    options = Options(dry_run=dry_run, delete=delete, checksum=checksum, jobs=jobs)
    with start(spec, options) as session:  # the hosts log in while the rest loads
        # imported here, not at the top, so that loading them overlaps the logins
        from patchctl.patchsets.loader import load_patchsets
        from patchctl.cli.targets import open_target

        sets = load_patchsets(patchsets)
        tree = open_target(target, config)
        if as_json:
            display: Any = None
        elif sys.stdout.isatty():
            display = LiveTable(spec.name)
        else:
            display = PlainLines()
        with display if isinstance(display, LiveTable) else nullcontext():
            result = session.run(tree.root, sets, progress=display.update if display else None)
    if as_json:
        render.emit_json(result.to_json())
    else:
        _report(result)
    return 0 if result.ok else 1
