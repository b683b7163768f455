"""Where a recorded resolution is replayed, what verify says of it, and how revert takes it back
(patchsets/kinds/replay.py), on small trees with a resolutions.toml written as refresh writes it.

Issue 41's second audit planted one-line bugs in the replay that the conflict-workflow tests let
pass: the resolved lines a patch owns shifted by one (a stray tagged line counted as the patch's,
or its own tagged line not), a whole-file resolution replayed into a file that only contains its
text, the place of a key ignored where its line occurs twice, a revert that goes back through a
resolution when the patch was applied by its own change. Each test runs the CLI on a real tree.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from tests.clirun import run
from tests.patchsets.conflict_forks import MANIFEST, build, snapshot

from patchctl.patchsets import resolutions
from patchctl.patchsets.model import Resolution

PID = "requirements-pandas"
REQS = "requirements.txt"


def patchset(root: Path, kind: str, target: str, params: str, pid: str = PID) -> Path:
    root.mkdir()
    (root / "patchset.toml").write_text(MANIFEST.format(id=pid, kind=kind, target=target, params=params), "utf-8")
    return root


def requirement(root: Path, *recorded: tuple[str, str]) -> Path:
    """pandas becomes pandas==2.0, with a resolution recorded for each (upstream's line, the user's)."""
    ps = patchset(root, "requirement", REQS, 'package = "pandas"\nwas = "pandas"\nnow = "pandas==2.0"')
    for before, after in recorded:
        resolutions.record(ps, PID, Resolution(resolutions.context_of(before), "", before, after, "verl 1"))
    return ps


def verify(tree: Path, ps: Path) -> dict[str, Any]:
    code, out = run("verify", "--target", str(tree), "--patchset", str(ps), "--json")
    doc = json.loads(out)
    assert code == (0 if doc["ok"] else 1), out
    return doc


def apply(tree: Path, ps: Path) -> tuple[int, dict[str, Any]]:
    code, out = run("apply", "--target", str(tree), "--patchset", str(ps), "--json")
    (row,) = json.loads(out)["results"]
    return code, row


def test_the_resolved_lines_are_the_patchs_and_the_lines_around_them_are_not(tmp_path: Path) -> None:
    """Upstream's line becomes the user's, tagged: verify counts that tag as the patch's, and the
    stray tagged lines right above and below it as hand edits no patch accounts for."""
    ps = requirement(tmp_path / "ps", ("pandas>=1.5\n", "pandas>=2.0  # Uky: resolved\n"))
    tree = build(tmp_path / "v2", {REQS: "numpy  # Uky: stray\npandas>=1.5\nray  # Uky: stray\n"})
    code, row = apply(tree, ps)
    assert code == 0 and row["status"] == "applied" and "the resolution recorded on verl 1" in row["reason"], row
    assert (tree / REQS).read_text() == "numpy  # Uky: stray\npandas>=2.0  # Uky: resolved\nray  # Uky: stray\n"
    doc = verify(tree, ps)
    assert doc["ok"] and doc["patches"][0]["reason"].startswith(f"{REQS}: as the conflict was resolved")
    assert doc["tags"]["accounted"] == 1
    assert [(t["path"], t["line"]) for t in doc["tags"]["unaccounted"]] == [(REQS, 1), (REQS, 3)]


def test_a_modified_line_is_said_to_have_a_resolution_only_where_one_fits(tmp_path: Path) -> None:
    ps = requirement(tmp_path / "ps", ("pandas>=1.5\n", "pandas>=2.0\n"))
    fits = verify(build(tmp_path / "v1", {REQS: "numpy\npandas>=1.5\nray\n"}), ps)["patches"][0]
    assert fits["status"] == "missing" and "a recorded resolution fits here" in fits["reason"]
    other = verify(build(tmp_path / "v3", {REQS: "numpy\npandas<3\nray\n"}), ps)["patches"][0]
    assert other["status"] != "missing" and "a recorded resolution fits here" not in other["reason"], other


def test_a_patch_applied_by_its_own_change_is_checked_and_reverted_by_it(tmp_path: Path) -> None:
    """The user resolved an earlier conflict to the patch's own line: on a tree where the patch
    applies as it is, verify gives the kind's own answer and revert gives BASE's line back, not
    the upstream line that resolution replaced."""
    ps = requirement(tmp_path / "ps", ("pandas>=1.5\n", "pandas==2.0\n"))
    tree = build(tmp_path / "v0")
    pristine = snapshot(tree)
    code, row = apply(tree, ps)
    assert code == 0 and "resolution" not in row["reason"], row
    (check,) = verify(tree, ps)["patches"]
    assert check["status"] == "present" and "as the conflict was resolved" not in check["reason"], check
    code, out = run("revert", "--target", str(tree), "--patchset", str(ps))
    assert code == 0 and snapshot(tree) == pristine, out


@pytest.mark.parametrize("through", ["resolution", "own change"])
def test_a_line_edited_after_apply_is_not_reverted(tmp_path: Path, through: str) -> None:
    ps = requirement(tmp_path / "ps", ("pandas>=1.5\n", "pandas>=2.0\n"))
    tree = build(tmp_path / "v", {REQS: "numpy\npandas>=1.5\nray\n"} if through == "resolution" else {})
    assert apply(tree, ps)[0] == 0
    (tree / REQS).write_text("numpy\npandas>=2.5  # edited by hand\nray\n", encoding="utf-8")
    before = snapshot(tree)
    code, out = run("revert", "--target", str(tree), "--patchset", str(ps), "--json")
    assert code == 1 and json.loads(out)["results"][0]["status"] == "conflict", out
    assert snapshot(tree) == before


def test_a_resolution_recorded_at_an_empty_place_is_not_replayed_where_the_place_holds_text(tmp_path: Path) -> None:
    ps = requirement(tmp_path / "ps", ("", "pandas>=2.0\n"))
    tree = build(tmp_path / "v", {REQS: "numpy\npandas>=1.5\nray\n"})
    before = snapshot(tree)
    code, row = apply(tree, ps)
    assert code == 1 and row["status"] == "conflict", row
    assert snapshot(tree) == before


def test_a_key_whose_line_occurs_twice_is_resolved_at_its_own_place(tmp_path: Path) -> None:
    """trainer.total_epochs and actor.total_epochs read alike: the resolution goes to the patch's key."""
    yaml = "trainer:\n  total_epochs: 3\nactor:\n  total_epochs: 3\n"
    params = 'path = ["trainer", "total_epochs"]\nwas = "  total_epochs: 3\\n"\nnow = "  total_epochs: 5\\n"'
    ps = patchset(tmp_path / "ps", "config-key", "verl/c.yaml", params, pid="epochs")
    before = "  total_epochs: 4\n"
    resolutions.record(
        ps, "epochs", Resolution(resolutions.context_of(before), "", before, "  total_epochs: 6\n", "v1")
    )
    tree = build(tmp_path / "v", {"verl/c.yaml": yaml.replace("3", "4")})
    code, row = apply(tree, ps)
    assert code == 0 and "resolution" in row["reason"], row
    assert (tree / "verl/c.yaml").read_text() == "trainer:\n  total_epochs: 6\nactor:\n  total_epochs: 4\n"


ADDED = "verl/added.txt"


def added_file(root: Path, resolved: str) -> Path:
    """An add-file patch whose conflict (upstream added the file too) was resolved to ``resolved``."""
    ps = patchset(root, "add-file", ADDED, 'source = "files/added.txt"', pid="added")
    (root / "files").mkdir()
    (root / "files" / "added.txt").write_text("ours\n", encoding="utf-8")
    r = Resolution(resolutions.context_of("theirs\n"), "", "theirs\n", resolved, "verl 1", whole=True)
    resolutions.record(ps, "added", r)
    return ps


def test_a_whole_file_resolution_owns_every_line_of_the_file(tmp_path: Path) -> None:
    ps = added_file(tmp_path / "ps", "theirs  # Uky: merged\nours\n")
    tree = build(tmp_path / "v", {ADDED: "theirs\n"})
    assert apply(tree, ps)[0] == 0
    doc = verify(tree, ps)
    assert doc["ok"] and doc["tags"] == {"accounted": 1, "unaccounted": []}, doc


def test_a_whole_file_resolution_is_replayed_only_onto_exactly_upstreams_file(tmp_path: Path) -> None:
    ps = added_file(tmp_path / "ps", "theirs\nours\n")
    tree = build(tmp_path / "v", {ADDED: "theirs\nand a line more upstream\n"})
    before = snapshot(tree)
    code, row = apply(tree, ps)
    assert code == 1 and row["status"] == "conflict", row
    assert snapshot(tree) == before


def test_a_resolved_tree_without_a_record_reverts_to_upstreams_line(tmp_path: Path) -> None:
    """A tree that holds the resolved line but no record of it (copied, or its record lost): the
    resolution tells revert what upstream had there."""
    ps = requirement(tmp_path / "ps", ("pandas>=1.5\n", "pandas>=2.0\n"))
    tree = build(tmp_path / "v", {REQS: "numpy\npandas>=2.0\nray\n"})
    code, out = run("revert", "--target", str(tree), "--patchset", str(ps))
    assert code == 0 and "upstream's text restored" in out, out
    assert (tree / REQS).read_text() == "numpy\npandas>=1.5\nray\n"


def test_two_resolutions_to_one_text_are_not_guessed_between(tmp_path: Path) -> None:
    """Resolved alike in two versions whose upstream lines differed: with no record to say which,
    revert does not pick one."""
    ps = requirement(tmp_path / "ps", ("pandas>=1.5\n", "pandas>=2.0\n"), ("pandas>=1.6\n", "pandas>=2.0\n"))
    tree = build(tmp_path / "v", {REQS: "numpy\npandas>=2.0\nray\n"})
    before = snapshot(tree)
    code, out = run("revert", "--target", str(tree), "--patchset", str(ps), "--json")
    assert code == 1 and json.loads(out)["results"][0]["status"] == "conflict", out
    assert snapshot(tree) == before


def test_a_resolution_whose_text_was_edited_since_is_answered_without_a_crash(tmp_path: Path) -> None:
    """Applied through a two-line resolution, then its second line edited by hand: the resolution's
    text is gone while the patch's own line is there. Revert answers (the kind's own way), keeps
    the hand edit, and never fails inside."""
    ps = requirement(tmp_path / "ps", ("pandas>=1.5\n", "pandas==2.0\nray>=2\n"))
    tree = build(tmp_path / "v", {REQS: "numpy\npandas>=1.5\n"})
    assert apply(tree, ps)[0] == 0
    (tree / REQS).write_text("numpy\npandas==2.0\nray>=3\n", encoding="utf-8")
    code, out = run("revert", "--target", str(tree), "--patchset", str(ps))
    assert code in (0, 1) and "internal error" not in out, out
    assert "ray>=3\n" in (tree / REQS).read_text()


def test_a_hand_written_resolution_of_a_file_not_there_yet_is_no_crash(tmp_path: Path) -> None:
    """resolutions.toml is input: an add-file's entry left without ``whole`` on a tree that lacks
    the file is answered as missing, and apply adds the file."""
    ps = patchset(tmp_path / "ps", "add-file", ADDED, 'source = "files/added.txt"', pid="added")
    (ps / "files").mkdir()
    (ps / "files" / "added.txt").write_text("ours\n", encoding="utf-8")
    resolutions.record(ps, "added", Resolution(resolutions.context_of("theirs\n"), "", "theirs\n", "theirs\nours\n"))
    tree = build(tmp_path / "v")
    (check,) = verify(tree, ps)["patches"]
    assert check["status"] == "missing", check
    assert apply(tree, ps)[0] == 0 and (tree / ADDED).read_text() == "ours\n"
