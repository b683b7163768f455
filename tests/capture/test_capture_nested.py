"""Minimal anchors (issue 27, requirement 2): an edit deep in a loop is anchored in that loop.

verl's ``RayPPOTrainer.fit`` is one statement per epoch loop of hundreds of lines: a one-line
insertion used to carry the whole loop, so any upstream change anywhere in it made the patch a
conflict. Now the patch names the blocks around it and replaces a few lines.
"""

from __future__ import annotations

import ast
from pathlib import Path

import tomllib
from tests.capture.test_capture_refuses import capture

from patchctl import releases
from patchctl.capture import nested, pyunits
from patchctl.capture.hunks import diff
from patchctl.patchsets.kinds import KINDS
from patchctl.patchsets.kinds.base import Context, EditStatus
from patchctl.patchsets.kinds.pyparse import split_lines
from patchctl.patchsets.model import Patch
from patchctl.tags import tag_regex

TRAINER = "verl/trainer/ppo/ray_trainer.py"
#: a line deep in fit's `for batch_dict` loop, and one far from it in the same loop
INSERT_AFTER = '                        gen_batch_output.meta_info.pop("timing", None)\n'
FAR = '                            raise ValueError("A reward_fn is required for REMAX advantage estimation.")\n'


def draft(base: str, fork: str, narrowest: bool) -> dict:
    blines, flines = split_lines(base), split_lines(fork)
    units = pyunits.merge(
        [pyunits.find_unit(ast.parse(fork), flines, h) for h in diff(blines, flines, tag_regex({"Uky"}))], flines
    )
    how = nested.place_narrowest if narrowest else pyunits.place
    assert len(units) == 1 and how(units[0], flines, ast.parse(base), blines, set(), False) is None
    return units[0].params


def test_an_insertion_deep_in_fit_survives_upstream_edits_elsewhere_in_the_loop() -> None:
    base = (releases.materialize("0.6.1") / TRAINER).read_text()
    fork = base.replace(INSERT_AFTER, INSERT_AFTER + "                        self.uky_seen = True  # Uky\n")
    upstream = base.replace(FAR, FAR.replace("A reward_fn is required", "REMAX needs a reward_fn"))
    wide, narrow = draft(base, fork, False), draft(base, fork, True)
    assert wide["scope"] == narrow["scope"] == "RayPPOTrainer.fit"
    assert narrow["blocks"] == [
        "for epoch in range(self.config.trainer.total_epochs):",
        "for batch_dict in self.train_dataloader:",
        'with marked_timer("step", timing_raw):',
        'with marked_timer("gen", timing_raw, color="red"):',
    ]
    assert len(split_lines(narrow["before"])) <= 2 and len(split_lines(wide["before"])) > 100
    kind = KINDS["structural"]
    for params, status in ((wide, EditStatus.CONFLICT), (narrow, EditStatus.CHANGED)):
        p = kind.parse_params(params, Path("."), Path("patchset.toml"), "p")
        edit = kind.apply(
            upstream, Patch("p", "t", "w", "Uky", "structural", (TRAINER,), p), Context(Path("."), TRAINER)
        )
        assert edit.status is status, edit.reason
    assert edit.text == fork.replace(FAR, FAR.replace("A reward_fn is required", "REMAX needs a reward_fn"))


def test_a_repeated_loop_falls_back_to_the_wider_anchor(tmp_path: Path) -> None:
    """Two loops read alike: the loop header names no single place, so the edit is anchored by
    the loop's neighbours in the method, as before, rather than guessed."""
    loop = "        for _ in range(steps):\n            total += 1\n"
    base = (
        f"class T:\n    def fit(self, steps):\n        total = 0\n{loop}        self.mid = total\n"
        f"{loop}        return total\n"
    )
    fork = base.replace(
        "        self.mid = total\n" + loop,
        "        self.mid = total\n" + loop.replace("total += 1\n", "total += 1\n            total *= 2  # Uky\n"),
    )
    code, doc, human = capture(tmp_path, {"t.py": base}, {"t.py": fork})
    assert code == 0 and doc["left_out"] == [], human
    params = tomllib.loads((tmp_path / "out" / "patchset.toml").read_text())["patch"][0]["params"]
    assert "blocks" not in params and params["above"] == ["self.mid = total"], params


def test_an_insertion_above_a_loop_and_an_edit_inside_it_travel_as_separate_patches(tmp_path: Path) -> None:
    """Issue 38 requirement 2: each hunk is narrowed before hunks are joined. Joined first, at the
    level of ``fit``, the line above the epoch loop and the line deep inside it became one patch
    holding the whole loop, so any upstream change in the loop held both back."""
    base = (releases.materialize("0.6.1") / TRAINER).read_text()
    above = "        next_step_profile = False\n"
    fork = base.replace(above, above + "        self.uky_started = True  # Uky\n").replace(
        INSERT_AFTER, INSERT_AFTER + "                        self.uky_seen = True  # Uky\n"
    )
    code, doc, human = capture(tmp_path, {TRAINER: base}, {TRAINER: fork})
    assert code == 0 and doc["left_out"] == [], human
    patches = tomllib.loads((tmp_path / "out" / "patchset.toml").read_text())["patch"]
    assert len(patches) == 2, [p["params"] for p in patches]
    sizes = [
        len(split_lines(p["params"]["before"])) + len(p["params"]["above"]) + len(p["params"]["below"]) for p in patches
    ]
    assert max(sizes) <= 6, sizes
    upstream = base.replace(FAR, FAR.replace("A reward_fn is required", "REMAX needs a reward_fn"))
    kind, text = KINDS["structural"], upstream
    for raw in patches:
        p = kind.parse_params(raw["params"], Path("."), Path("patchset.toml"), raw["id"])
        edit = kind.apply(
            text, Patch(raw["id"], "t", "w", "Uky", "structural", (TRAINER,), p), Context(Path("."), TRAINER)
        )
        assert edit.status is EditStatus.CHANGED, edit.reason
        text = edit.text
    assert text == fork.replace(FAR, FAR.replace("A reward_fn is required", "REMAX needs a reward_fn"))
