"""One rsync to one host, its files counted as rsync reports them and shown live.

Apart from ``hostrun`` because it is the one step of a host's run that keeps a running count
while it goes: that mutable count lives in this function only, and ``HostRun`` sees nothing of it
but the ``Sent`` it returns. Shown every ``LIVE_EVERY`` seconds, and once at the start and the end.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from patchctl.clusters import Cluster, Host
from patchctl.migrate import transfer
from patchctl.migrate.hoststeps import Sent, Tally
from patchctl.migrate.timing import PhaseClock

#: seconds between two live updates of a transfer: an event per file sent cost patchctl ~4 us of
#: CPU per file and host (0.4 s per 100k files), taken from rsync on a machine of few cores
LIVE_EVERY = 0.1


def send(
    cluster: Cluster,
    host: Host,
    root: Path,
    files_from: Path,
    tally: Tally,
    *,
    checksum: bool,
    control: Path,
    clock: PhaseClock,
    show: Callable[[Tally], None],
    empty_root: bool = False,
) -> Sent:
    """rsync of ``files_from`` (paths under ``root``) to ``host``, timed on ``clock``; ``show``
    gets the run's tally (``tally`` plus this transfer's files) as it grows; ``empty_root``:
    see transfer."""
    running, shown = tally, time.monotonic()

    def on_item(item: transfer.Item) -> None:
        nonlocal running, shown  # this transfer's own count, for the live progress
        if item.is_file_sent:
            running = running.plus(item)
            if time.monotonic() - shown >= LIVE_EVERY:
                shown = time.monotonic()
                show(running)

    def on_bytes(moved: int) -> None:
        """rsync's running total, also inside one large file; the exact figure (%b, after delta
        compression) replaces it as each file ends."""
        nonlocal shown
        if time.monotonic() - shown >= LIVE_EVERY:
            shown = time.monotonic()
            show(Tally(running.files, max(running.bytes, tally.bytes + moved)))

    show(tally)
    with clock.transferring():
        done = transfer.send(
            cluster,
            host,
            root,
            files_from,
            checksum=checksum,
            control=control,
            on_item=on_item,
            on_bytes=on_bytes,
            empty_root=empty_root,
        )
    show(running)
    return Sent(done, running)
