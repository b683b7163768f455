"""Revert's edges: the record's patchsets and order, a file an add-file patch created and
another patch edits, a file deleted or rewritten by hand, a kind's own refusal (#18, req. 7:
each caught a mutation survivor)."""

from __future__ import annotations

import json
from pathlib import Path

from tests.faults.helpers import make_patchset, make_tree, run, snapshot

RECORD = ".patchctl/applied.json"
ON_ADDED = '''
[[patch]]
id = "extra-file"
title = "the added file"
why = "creates verl/extra.py"
kind = "add-file"
target = ["verl/extra.py"]
[patch.params]
source = "files/extra.py"

[[patch]]
id = "extra-prelude"
title = "a block in the added file"
why = "a patch inside a file another patch adds"
kind = "prelude"
target = ["verl/extra.py"]
[patch.params]
block = """
# T: in the added file
import os"""
'''
KEYWORD = """
[[patch]]
id = "rename"
title = "a keyword renamed"
why = "a kind whose revert can refuse"
kind = "keyword-rename"
target = ["verl/__init__.py"]
[patch.params]
call = "load"
old_keyword = "a"
new_keyword = "b"
new_value = "2"
"""


def _patchset(root: Path, body: str) -> Path:
    (root / "files").mkdir(parents=True)
    (root / "files" / "extra.py").write_text('"""extra."""\n\nimport sys\n')
    (root / "patchset.toml").write_text('[patchset]\nname = "edges"\ntag = "T"\n' + body)
    return root


def test_a_record_naming_a_patchset_not_given_is_refused(tmp_path: Path) -> None:
    tree = make_tree(tmp_path / "tree")
    assert run("apply", "-t", str(tree), "-p", str(make_patchset(tmp_path / "ps", n_files=1)))[0] == 0
    before = snapshot(tree)
    code, out = run("revert", "-t", str(tree), "-p", str(_patchset(tmp_path / "other", ON_ADDED)))
    assert code == 2 and "the apply record lists patchset 'fault'; pass it with --patchset DIR" in out
    assert snapshot(tree) == before


def test_a_partial_revert_keeps_the_other_entries_in_their_order(tmp_path: Path) -> None:
    tree = make_tree(tmp_path / "tree")
    ps = make_patchset(tmp_path / "ps", n_files=3)
    assert run("apply", "-t", str(tree), "-p", str(ps))[0] == 0
    order = [e["patch"] for e in json.loads((tree / RECORD).read_text())["patches"]]
    assert len(order) == 4
    assert run("revert", "-t", str(tree), "-p", str(ps), "--only", order[1])[0] == 0
    assert [e["patch"] for e in json.loads((tree / RECORD).read_text())["patches"]] == order[:1] + order[2:]


def test_a_patch_in_a_file_another_patch_added(tmp_path: Path) -> None:
    """--only the inner patch reverts it alone; a full revert takes both back."""
    tree = make_tree(tmp_path / "tree")
    ps = _patchset(tmp_path / "ps", ON_ADDED)
    before = snapshot(tree)
    code, out = run("apply", "-t", str(tree), "-p", str(ps))
    assert code == 0, out
    assert "# T: in the added file" in (tree / "verl" / "extra.py").read_text()
    code, out = run("revert", "-t", str(tree), "-p", str(ps), "--only", "extra-prelude", "--json")
    assert code == 0, out
    assert [(r["patch"], r["status"]) for r in json.loads(out)["results"]] == [("extra-prelude", "reverted")]
    assert (tree / "verl" / "extra.py").read_text() == '"""extra."""\n\nimport sys\n'
    assert run("apply", "-t", str(tree), "-p", str(ps))[0] == 0
    code, out = run("revert", "-t", str(tree), "-p", str(ps), "--json")
    assert code == 0, out
    assert {(r["patch"], r["status"]) for r in json.loads(out)["results"]} == {
        ("extra-file", "reverted"),
        ("extra-prelude", "reverted"),
    }
    assert snapshot(tree) == before


def test_an_added_file_deleted_by_hand_is_already_back(tmp_path: Path) -> None:
    tree = make_tree(tmp_path / "tree")
    ps = make_patchset(tmp_path / "ps", n_files=1, prelude=False)
    assert run("apply", "-t", str(tree), "-p", str(ps))[0] == 0
    (tree / "top000.md").unlink()
    code, out = run("revert", "-t", str(tree), "-p", str(ps), "--json")
    assert code == 0, out
    [row] = json.loads(out)["results"]
    assert row["status"] == "not-applied" and row["reason"] == "top000.md is already back to what it was before apply"
    assert not (tree / RECORD).exists()


def test_a_file_rewritten_by_hand_shows_what_apply_wrote(tmp_path: Path) -> None:
    tree = make_tree(tmp_path / "tree")
    ps = make_patchset(tmp_path / "ps", n_files=0)
    assert run("apply", "-t", str(tree), "-p", str(ps))[0] == 0
    (tree / "verl" / "__init__.py").write_text('"""verl, rewritten."""\n\nimport sys\n')
    code, out = run("revert", "-t", str(tree), "-p", str(ps), "--json")
    assert code == 1
    [row] = json.loads(out)["results"]
    assert row["status"] == "conflict" and "the diff shows what apply wrote" in row["reason"]
    assert "+# T: set before anything is imported" in row["detail"]


def test_a_kinds_own_refusal_to_revert_is_the_rows_status(tmp_path: Path) -> None:
    """The tagged pair is intact, but the two lines disagree on a comma: keyword-rename refuses."""
    tree = make_tree(tmp_path / "tree")
    ps = _patchset(tmp_path / "ps", KEYWORD)
    init = tree / "verl" / "__init__.py"
    init.write_text('"""verl."""\n\nx = load(\n    p,\n    a=1,\n)\n')
    assert run("apply", "-t", str(tree), "-p", str(ps), "--force")[0] == 0
    init.write_text(init.read_text().replace("b=2, # T", "b=2 # T"))
    before = snapshot(tree)
    code, out = run("revert", "-t", str(tree), "-p", str(ps), "--json")
    assert code == 1
    [row] = json.loads(out)["results"]
    assert row["status"] == "conflict" and "disagree on a trailing comma" in row["reason"]
    assert snapshot(tree) == before
