"""A step line relayed twice (two Ray nodes on one machine) counts once."""

from __future__ import annotations

from patchctl.train.logparse import LogScan

LINE = "{prefix} step:{n} - actor/pg_loss:0.1 - critic/score/mean:0.5"


def test_a_step_relayed_by_two_nodes_counts_once() -> None:
    scan = LogScan()
    for n in (1, 2):
        assert scan.feed(LINE.format(prefix="(TaskRunner pid=1)", n=n), at=float(n)) is not None
        assert scan.feed(LINE.format(prefix="(TaskRunner pid=1, ip=127.0.0.2)", n=n), at=n + 0.01) is None
    assert [s.step for s in scan.steps] == [1, 2]


def test_a_step_logged_again_with_other_values_is_kept() -> None:
    scan = LogScan()
    scan.feed(LINE.format(prefix="", n=1))
    assert scan.feed(LINE.format(prefix="", n=1).replace("0.5", "0.7")) is not None
