"""Revert and the apply record: a partial revert keeps the other patches' entries and refreshes
their hashes, and revert without a record still refuses a patch edited by hand (#18, req. 7)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.conftest import git
from tests.faults import shared_file
from tests.faults.helpers import run, snapshot

from patchctl.fsutil import sha256_file

#: the shared fixtures (pytest finds them by these names in the module)
tree, ps = shared_file.tree, shared_file.ps

RECORD = ".patchctl/applied.json"


def _entries(tree: Path) -> dict[str, dict]:
    return {e["patch"]: e for e in json.loads((tree / RECORD).read_text())["patches"]}


def test_revert_only_keeps_the_other_patches_entries_with_fresh_hashes(tree: Path, ps: Path) -> None:
    assert run("apply", "-t", str(tree), "-p", str(ps))[0] == 0
    applied = _entries(tree)
    assert set(applied) == {"init-prelude", "load-mode"}
    code, out = run("revert", "-t", str(tree), "-p", str(ps), "--only", "init-prelude")
    assert code == 0, out
    left = _entries(tree)
    assert set(left) == {"load-mode"}, "a partial revert dropped another patch's entry"
    # the file changed under the kept entry: its hash is the file's, not the one apply saw
    assert left["load-mode"]["sha256_after"] == sha256_file(tree / "verl" / "__init__.py")
    assert {k: v for k, v in left["load-mode"].items() if k != "sha256_after"} == {
        k: v for k, v in applied["load-mode"].items() if k != "sha256_after"
    }
    # so patchctl still knows the file as its own: re-applying needs no --force
    code, out = run("apply", "-t", str(tree), "-p", str(ps), "--only", "init-prelude")
    assert code == 0, out
    assert _entries(tree)["load-mode"]["sha256_after"] == sha256_file(tree / "verl" / "__init__.py")


def test_a_full_revert_after_a_partial_one_restores_the_tree(tree: Path, ps: Path) -> None:
    before = snapshot(tree)
    assert run("apply", "-t", str(tree), "-p", str(ps))[0] == 0
    assert run("revert", "-t", str(tree), "-p", str(ps), "--only", "load-mode")[0] == 0
    assert 'mode="a"' in (tree / "verl" / "__init__.py").read_text()
    code, out = run("revert", "-t", str(tree), "-p", str(ps), "--json")
    assert code == 0, out
    assert [(r["patch"], r["status"]) for r in json.loads(out)["results"]] == [("init-prelude", "reverted")]
    assert snapshot(tree) == before


def test_without_a_record_a_hand_edited_patch_is_a_conflict(tree: Path, ps: Path) -> None:
    """No record to compare with: the intact patch is not reverted alone, the edited one is named."""
    assert run("apply", "-t", str(tree), "-p", str(ps))[0] == 0
    (tree / RECORD).unlink()
    init = tree / "verl" / "__init__.py"
    init.write_text(init.read_text().replace('mode="r")  # T', 'mode="w")  # T'))
    assert 'mode="w")  # T' in init.read_text()
    edited = snapshot(tree)
    code, out = run("revert", "-t", str(tree), "-p", str(ps), "--json")
    assert code == 1, out
    rows = {r["patch"]: r["status"] for r in json.loads(out)["results"]}
    assert rows == {"load-mode": "conflict", "init-prelude": "held-back"}
    assert snapshot(tree) == edited


def test_the_record_is_stable_indented_json_in_a_fixed_key_order(tree: Path, ps: Path) -> None:
    """It travels with the tree and shows in git diffs: format 1, two-space indent, keys as written."""
    assert run("apply", "-t", str(tree), "-p", str(ps))[0] == 0
    text = (tree / RECORD).read_text()
    doc = json.loads(text)
    assert text == json.dumps(doc, indent=2) + "\n"
    assert list(doc) == ["format", "upstream", "patchsets", "patches"] and doc["format"] == 1
    assert list(doc["patches"][0]) == [
        "patchset",
        "patch",
        "kind",
        "path",
        "sha256_before",
        "sha256_after",
        "applied_at",
        "undo",
    ]


@pytest.mark.parametrize(
    ("damage", "says"),
    [
        ("{not json", "the apply record is damaged (Expecting property name"),
        (
            '{"format": 1, "upstream": {"version": null, "commit": null}, "patches": [{"patch": "x"}]}',
            "the apply record is damaged (Entry.__init__() missing",
        ),
        (
            '{"format": 1, "upstream": {"version": null, "commit": null}, "patches": ['
            + json.dumps(
                {
                    "patchset": "fault",
                    "patch": "x",
                    "kind": "prelude",
                    "path": 5,
                    "sha256_before": None,
                    "sha256_after": None,
                    "applied_at": "",
                }
            )
            + "]}",
            "patch 'x' names 5, which is not a path",
        ),
        (
            '{"format": 1, "upstream": {"version": null, "commit": null}, "patches": ['
            + json.dumps(
                {
                    "patchset": "fault",
                    "patch": "x",
                    "kind": "prelude",
                    "path": "",
                    "sha256_before": None,
                    "sha256_after": None,
                    "applied_at": "",
                }
            )
            + "]}",
            "patch 'x' names '', which is not a path",
        ),
    ],
)
def test_a_damaged_record_is_one_line_and_nothing_moves(tree: Path, ps: Path, damage: str, says: str) -> None:
    assert run("apply", "-t", str(tree), "-p", str(ps))[0] == 0
    (tree / RECORD).write_text(damage)
    before = snapshot(tree)
    code, out = run("revert", "-t", str(tree), "-p", str(ps))
    assert code == 2 and says in out and out.count("\n") == 1, out
    assert "git checkout -- .patchctl/applied.json" in out
    assert snapshot(tree) == before


def test_find_matches_both_patchset_and_patch() -> None:
    from patchctl.patchsets.record import Entry, Record

    a, b = Entry("one", "x", "prelude", "a.py", None, None, ""), Entry("two", "y", "prelude", "b.py", None, None, "")
    record = Record(entries=[a, b])
    assert record.find("one", "x") is a and record.find("two", "y") is b
    assert record.find("one", "y") is None and record.find("two", "x") is None


def test_revert_drops_the_entries_of_files_already_back_by_hand(tree: Path, ps: Path) -> None:
    """A file restored with git checkout: revert says so and forgets the patch (the record kept
    it, and verify went on saying "it was applied" on an unpatched tree: found by #18's audit)."""
    before = snapshot(tree)
    assert run("apply", "-t", str(tree), "-p", str(ps))[0] == 0
    git(tree, "checkout", "--", "verl/__init__.py")
    code, out = run("revert", "-t", str(tree), "-p", str(ps), "--json")
    assert code == 0, out
    assert {r["status"] for r in json.loads(out)["results"]} == {"not-applied"}
    assert json.loads(out)["written"] == [RECORD]
    assert snapshot(tree) == before and not (tree / RECORD).exists()
    assert "it was applied" not in run("verify", "-t", str(tree), "-p", str(ps))[1]
    code, out = run("revert", "-t", str(tree), "-p", str(ps), "--json")  # nothing left to do, nothing written
    assert code == 0 and json.loads(out)["written"] == []
