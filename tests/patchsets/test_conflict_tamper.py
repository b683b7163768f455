"""The conflict workflow's refusals and edge cases for every kind (issue 27.6): a binary file gets
no markers and says why, markers left in a file fail verify and refresh, a conflict list or a
``resolutions.toml`` reaching outside the tree, into ``.git`` or emptying a file is refused, and a
file without a final line break keeps it unless a marker line follows its last line."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from tests.clirun import run
from tests.patchsets.conflict_forks import CASES, MANIFEST, build, capture, snapshot


def test_a_binary_conflict_says_why_it_gets_no_markers(tmp_path: Path) -> None:
    blob = {"verl/logo.png": None}
    base = build(tmp_path / "base")
    fork = build(tmp_path / "fork", blob)
    (fork / "verl/logo.png").write_bytes(b"\x89PNG\r\n\x00ours")
    code, out = run("capture", "--from", str(fork), "--base", str(base), "--all", "--out", str(tmp_path / "ps"))
    assert code == 0 and " blob " in out, out
    tree = build(tmp_path / "v1")
    (tree / "verl/logo.png").write_bytes(b"\x89PNG\r\n\x00theirs")
    pristine = snapshot(tree)
    for markers in (["--conflicts=markers"], []):  # the plain conflict's line (and so matrix's) says it too
        code, out = run("apply", "--target", str(tree), "--patchset", str(tmp_path / "ps"), *markers, "--json")
        (row,) = json.loads(out)["results"]
        assert code == 1 and row["status"] == "conflict", row
        assert row["reason"].count("no conflict markers: a binary file") == 1, row
    assert snapshot(tree) == pristine


def test_markers_left_in_the_file_fail_verify_and_refresh(tmp_path: Path) -> None:
    fork_edit, up_edit, *_ = CASES["config-key"]
    ps = capture(tmp_path, fork_edit, "config-key")
    tree = build(tmp_path / "v1", up_edit)
    run("apply", "--target", str(tree), "--patchset", str(ps), "--conflicts=markers")
    code, out = run("refresh", "--target", str(tree), "--patchset", str(ps))
    assert code == 2 and "still has a conflict marker at line" in out
    (tree / ".patchctl" / "conflicts.json").unlink()  # the list dropped by hand, the markers left
    code, out = run("verify", "--target", str(tree), "--patchset", str(ps))
    assert code == 1 and "verify: FAILED" in out, out
    assert not (ps / "resolutions.toml").exists()


@pytest.mark.parametrize("where", ["../outside.yaml", ".git/config", "sub/../../outside"])
def test_a_conflict_list_naming_a_path_outside_the_tree_or_in_git_is_refused(tmp_path: Path, where: str) -> None:
    fork_edit, up_edit, *_ = CASES["config-key"]
    ps = capture(tmp_path, fork_edit, "config-key")
    tree = build(tmp_path / "v1", up_edit)
    (tree / ".git").mkdir()
    (tree / ".git" / "config").write_text("[core]\n", encoding="utf-8")
    run("apply", "--target", str(tree), "--patchset", str(ps), "--conflicts=markers")
    state = tree / ".patchctl" / "conflicts.json"
    doc = json.loads(state.read_text(encoding="utf-8"))
    doc["conflicts"][0]["path"] = where
    state.write_text(json.dumps(doc), encoding="utf-8")
    code, out = run("refresh", "--target", str(tree), "--patchset", str(ps))
    assert code == 2 and "the list of conflicts is damaged" in out, out
    assert (tree / ".git" / "config").read_text(encoding="utf-8") == "[core]\n"
    assert not (ps / "resolutions.toml").exists()


@pytest.mark.parametrize(
    ("line", "says"),
    [
        ('path = "../../etc/passwd"', "unknown key"),
        ('path = ".git/hooks/pre-commit"', "unknown key"),
        ('patch = "../../etc"', "is no patch of the manifest"),
        ('after = ""', "only a delete-file's may be"),
    ],
)
def test_a_resolutions_file_naming_a_path_or_emptying_a_file_is_refused(tmp_path: Path, line: str, says: str) -> None:
    fork_edit, up_edit, rel, _, _, _, resolved = CASES["add-file"]
    ps = capture(tmp_path, fork_edit, "add-file")
    tree = build(tmp_path / "v1", up_edit)
    run("apply", "--target", str(tree), "--patchset", str(ps), "--conflicts=markers")
    (tree / rel).write_text(str(resolved), encoding="utf-8")
    assert run("refresh", "--target", str(tree), "--patchset", str(ps))[0] == 0
    file = ps / "resolutions.toml"
    text = file.read_text(encoding="utf-8")
    key = line.split(" = ")[0]
    text = re.sub(rf"^{key} = (?:'''.*?'''|\"[^\n]*\")\n", "", text, flags=re.S | re.M) if key != "path" else text
    file.write_text(text.replace("[[resolution]]\n", f"[[resolution]]\n{line}\n"), encoding="utf-8")
    again = build(tmp_path / "v2", up_edit)
    pristine = snapshot(again)
    code, out = run("apply", "--target", str(again), "--patchset", str(ps))
    assert code == 2 and "resolutions.toml" in out and says in out, out
    assert snapshot(again) == pristine


@pytest.mark.parametrize(("last", "conflict_at_end"), [("ray", False), ("pandas", True)])
def test_a_file_without_a_final_line_break_keeps_it_unless_a_marker_follows(
    tmp_path: Path, last: str, conflict_at_end: bool
) -> None:
    reqs = "numpy\npandas\nray" if last == "ray" else "numpy\nray\npandas"
    ps = tmp_path / "ps"
    ps.mkdir()
    params = 'package = "pandas"\nwas = "pandas"\nnow = "pandas==2.0"'
    manifest = MANIFEST.format(id="requirements-pandas", kind="requirement", target="requirements.txt", params=params)
    (ps / "patchset.toml").write_text(manifest, encoding="utf-8")
    tree = build(tmp_path / "v1", {"requirements.txt": reqs.replace("pandas", "pandas>=1.5")})
    code, out = run("apply", "--target", str(tree), "--patchset", str(ps), "--conflicts=markers")
    assert code == 1 and "conflict-marked" in out, out
    text = (tree / "requirements.txt").read_text(encoding="utf-8")
    assert text.endswith(">>>>>>> requirements-pandas: the patch's change\n") == conflict_at_end, text
    assert text.endswith("\n") == conflict_at_end
    assert "pandas>=1.5\n||||||| " in text  # no marker joins a line


def test_a_conflict_touching_a_marked_one_is_left_then_marked_once_that_one_is_refreshed(tmp_path: Path) -> None:
    yaml = "trainer:\n  total_epochs: 3\n  project: a\nactor:\n  lr: 1\n"
    base = {"verl/c.yaml": yaml}
    fork = {"verl/c.yaml": yaml.replace("epochs: 3", "epochs: 5").replace("project: a", "project: f")}
    ps = capture(tmp_path, fork, "config-key", base)
    tree = build(
        tmp_path / "v1", {"verl/c.yaml": yaml.replace("epochs: 3", "epochs: 4").replace("project: a", "project: u")}
    )
    code, out = run("apply", "--target", str(tree), "--patchset", str(ps), "--conflicts=markers", "--json")
    rows = {r["patch"]: r for r in json.loads(out)["results"]}
    assert code == 1 and rows["c-total-epochs"]["status"] == "conflict-marked", rows
    assert rows["c-project"]["status"] == "conflict" and "touches that of c-total-epochs" in rows["c-project"]["reason"]
    text = (tree / "verl/c.yaml").read_text(encoding="utf-8")  # written, though c-project got no markers
    assert text.count("<<<<<<< ") == 1 and "  project: u\n" in text
    start, end = text.index("<<<<<<< "), text.index("\n", text.index(">>>>>>> ")) + 1
    (tree / "verl/c.yaml").write_text(text[:start] + "  total_epochs: 6\n" + text[end:], encoding="utf-8")
    assert run("refresh", "--target", str(tree), "--patchset", str(ps))[0] == 0
    code, out = run("apply", "--target", str(tree), "--patchset", str(ps), "--conflicts=markers", "--json")
    rows = {r["patch"]: r for r in json.loads(out)["results"]}
    assert rows["c-total-epochs"]["status"] == "already-applied" and rows["c-project"]["status"] == "conflict-marked"
