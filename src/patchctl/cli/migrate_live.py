"""``migrate``'s live view: one redrawn row per host on a terminal, one line per phase change
elsewhere (the phase each host is in, what it sent, and where its time went)."""

from __future__ import annotations

from typing import Any

from patchctl import progress
from patchctl.cli import render
from patchctl.cli.echo import echo
from patchctl.cli.migrate_summary import human
from patchctl.migrate.results import Phase, Progress

STATUS_STYLE = {
    "ok": "green",
    "repaired": "yellow",
    "planned": "cyan",
    "mismatch": "red",
    "unreachable": "red",
    "failed": "red",
}


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
            t.add_row(
                host,
                f"[{STATUS_STYLE.get(phase, 'white')}]{phase}[/]",
                str(p.files),
                human(p.bytes),
                p.phases.describe() if p.phases else "",
            )
        return t

    def update(self, event: Progress) -> None:
        self.rows[event.host] = event
        self.live.update(self._table())

    def __enter__(self) -> LiveTable:
        self.live.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self.live.__exit__(*exc)  # type: ignore[arg-type] # rich's Live.__exit__ takes the exc_info triple we pass through


class PlainLines:
    """Not a TTY (CI logs, pipes): one line whenever a host changes phase (none with ``--json``);
    and where stderr is a terminal, the running totals on its progress line."""

    def __init__(self, cluster: str, shown: progress.Step, echo: bool) -> None:
        self.cluster, self.shown, self.echo = cluster, shown, echo
        self.phase: dict[str, Phase] = {}
        self.latest: dict[str, Progress] = {}

    def update(self, event: Progress) -> None:
        self.latest[event.host] = event
        busy = sum(1 for p in self.latest.values() if p.phase is not Phase.DONE)
        files, size = sum(p.files for p in self.latest.values()), sum(p.bytes for p in self.latest.values())
        self.shown.say(f"migrate {self.cluster}: {busy} host(s) at work, {files} files, {human(size)} sent")
        if not self.echo:
            return
        if event.phase is Phase.DONE and event.phases is not None:
            echo(f"{event.host}: done: {event.phases.describe()}")
        if self.phase.get(event.host) is event.phase or event.phase in (Phase.QUEUED, Phase.DONE):
            return
        self.phase[event.host] = event.phase
        sent = f" ({event.files} files, {human(event.bytes)} sent)" if event.phase is Phase.VERIFYING else ""
        echo(f"{event.host}: {event.phase.value}{sent}")
