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
from patchctl.patchsets.model import Patch
from patchctl.patchsets.placement.pyparse import split_lines
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


WORKERS = "verl/workers/fsdp_workers.py"
GENERATE = (
    '    @register(dispatch_mode=make_nd_compute_dataproto_dispatch_fn(mesh_name="rollout"))\n'
    '    @DistProfiler.annotate(color="red", role="rollout_generate")\n'
    "    def generate_sequences(self, prompts: DataProto):\n"
)


def test_a_method_added_above_one_with_the_same_decorators_is_its_own_patch(tmp_path: Path) -> None:
    """difflib put the new method's run from its ``def`` through the decorators of the method
    below it, so the run touched both methods and capture joined the new method with an edit
    inside ``generate_sequences``: one patch holding both. The run is slid to start after a
    blank line and end with one, as git does."""
    base = (releases.materialize("0.6.1") / WORKERS).read_text()
    new = GENERATE.replace("generate_sequences(self", "uky_generate(self") + (
        "        return self.generate_sequences(prompts)  # Uky\n\n"
    )
    assert_at = "        assert self._is_rollout\n        prompts = prompts.to(get_device_id())\n"
    fork = base.replace(GENERATE, new + GENERATE, 1).replace(
        assert_at, assert_at + "        prompts.meta_info['uky'] = True  # Uky\n", 1
    )
    line = fork[: fork.index(new)].count("\n") + 1  # the new method's decorators carry no tag: take them
    code, doc, human = capture(tmp_path, {WORKERS: base}, {WORKERS: fork}, "--include", f"{WORKERS}:{line}")
    assert code == 0 and doc["left_out"] == [], human
    patches = tomllib.loads((tmp_path / "out" / "patchset.toml").read_text())["patch"]
    scopes = sorted(p["params"]["scope"] for p in patches)
    assert scopes == ["ActorRolloutRefWorker", "ActorRolloutRefWorker.generate_sequences"], patches
    added = next(p for p in patches if p["params"]["scope"] == "ActorRolloutRefWorker")
    assert added["params"]["after"].strip() == new.strip() and not added["params"]["before"].strip(), added["params"]


def test_a_method_the_fork_moved_is_one_patch(tmp_path: Path) -> None:
    """Moving a method is an insertion and a deletion in one body. Apart, the first to land
    leaves the class defining the method twice (or not at all), which the load check refuses:
    the two travel together, as one patch."""
    methods = {n: f"    def {n}(self):\n        return {n!r}\n\n" for n in ("a", "b", "c", "d")}
    base = "class K:\n" + "".join(methods.values())
    fork = "class K:\n" + methods["c"] + methods["a"] + methods["b"] + methods["d"]
    fork = fork.replace("return 'c'", "return 'c'  # Uky", 1)
    code, doc, human = capture(tmp_path, {"k.py": base}, {"k.py": fork}, "--all", "--include", "k.py:2")
    assert code == 0 and doc["left_out"] == [], human
    (patch,) = tomllib.loads((tmp_path / "out" / "patchset.toml").read_text())["patch"]
    assert patch["params"]["scope"] == "K"
