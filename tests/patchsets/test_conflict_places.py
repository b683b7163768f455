"""A marker whose anchor fits more than one place (issue 38 requirement 5): the place whose
surroundings match the fork's wins, and the reason says how many places fit and which.

The case from the fork measurement: a barrier the fork put at the end of ``update_actor``;
upstream rewrote the logging line the barrier followed and now logs the same line at the start
of the method too, so the patch's anchor reads like two statements. It belongs at the end.
"""

from __future__ import annotations

import json
from pathlib import Path

from tests.clirun import run
from tests.patchsets.conflict_forks import build, capture, view

WORKER = "verl/workers/fsdp_workers.py"
BASE = (
    "class ActorRolloutRefWorker:\n"
    "    def update_actor(self, data):\n"
    "        data = data.to('cuda')\n"
    "        metrics = self.actor.update_policy(data=data)\n"
    '        log_gpu_memory_usage("After update policy")\n'
)
FORK = BASE + "        torch.distributed.barrier()  # Uky\n"
#: upstream: the anchor line is re-worded and logged at the start as well
UPSTREAM = (
    "class ActorRolloutRefWorker:\n"
    "    def update_actor(self, data):\n"
    '        log_gpu_memory_usage("update policy", logger=logger)\n'
    "        data = data.to(get_device_id())\n"
    "        metrics = self.actor.update_policy(data=data)\n"
    '        log_gpu_memory_usage("update policy", logger=logger)\n'
)


def marked(tmp_path: Path, upstream: str) -> tuple[dict, str]:
    ps = capture(tmp_path, {WORKER: FORK}, "structural", {WORKER: BASE})
    tree = build(tmp_path / "v1", {WORKER: upstream})
    out = run("apply", "--target", str(tree), "--patchset", str(ps), "--conflicts=markers", "--json")[1]
    (row,) = json.loads(out)["results"]
    return row, (tree / WORKER).read_text(encoding="utf-8")


def test_the_place_whose_surroundings_match_wins_and_the_places_are_listed(tmp_path: Path) -> None:
    row, text = marked(tmp_path, UPSTREAM)
    assert row["status"] == "conflict-marked", row
    assert "fits 2 places (line 3, line 6)" in row["reason"] and "surroundings match" in row["reason"], row
    _, _, change, rest = view(text)
    assert change == "        torch.distributed.barrier()  # Uky\n"
    # the markers end the method, after the second logging line: where the fork had the barrier
    assert rest.endswith('        log_gpu_memory_usage("update policy", logger=logger)\n\0'), rest


def test_places_the_surroundings_do_not_tell_apart_get_no_markers(tmp_path: Path) -> None:
    twice = (  # the logging line ends two bodies: nothing tells which end is the fork's
        "class ActorRolloutRefWorker:\n"
        "    def update_actor(self, data):\n"
        "        if self.offload:\n"
        "            metrics = self.actor.update_policy(data=data)\n"
        '            log_gpu_memory_usage("update policy", logger=logger)\n'
        "        if not self.offload:\n"
        "            metrics = self.actor.update_policy(data=data.to(get_device_id()))\n"
        '            log_gpu_memory_usage("update policy", logger=logger)\n'
    )
    row, text = marked(tmp_path, twice)
    assert row["status"] == "conflict", row
    assert "fits" in row["reason"] and "do not tell which" in row["reason"], row
    assert "<<<<<<<" not in text
