"""``patchctl refresh`` on a tree where one patch applied and one conflicted (patchsets/refresh.py):
what it records, what it refuses, and the tree's record it leaves for revert.

Issue 41's second audit planted one-line bugs in refresh that the conflict-workflow tests let pass:
the tree's record left without the resolved patch (or without the patch that applied cleanly), the
patchset's source not recorded, a conflict resolved to nothing recorded, a marker reported at the
wrong line, refusals that crash instead of naming the patchset. Each test runs the CLI on a tree
built here; the cutting of several conflicts in one file is also asserted on its own.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from tests.clirun import run
from tests.patchsets.conflict_forks import CASES, build, capture, snapshot

from patchctl.errors import ConflictUnresolved
from patchctl.patchsets import conflicts
from patchctl.patchsets.conflicts import Marked, digest
from patchctl.patchsets.refresh import _cut

REQS = "requirements.txt"
MARKED = re.compile(r"<<<<<<< .*?>>>>>>> [^\n]*\n", re.S)

TWO = """[patchset]
name = "ps"
tag = "Uky"

[[patch]]
id = "pin-pandas"
title = "t"
why = "w"
kind = "requirement"
target = ["requirements.txt"]

[patch.params]
package = "pandas"
was = "pandas"
now = "pandas==2.0"

[[patch]]
id = "pin-ray"
title = "t"
why = "w"
kind = "requirement"
target = ["requirements.txt"]

[patch.params]
package = "ray"
was = "ray"
now = "ray==2.0"
"""


def marked(tmp_path: Path) -> tuple[Path, Path, dict[str, bytes]]:
    """(patchset, tree, the tree before apply): pin-ray applied, pin-pandas marked (upstream has pandas>=1.5)."""
    ps = tmp_path / "ps"
    ps.mkdir()
    (ps / "patchset.toml").write_text(TWO, encoding="utf-8")
    tree = build(tmp_path / "v1", {REQS: "numpy\npandas>=1.5\nray\n"})
    pristine = snapshot(tree)
    code, out = run("apply", "--target", str(tree), "--patchset", str(ps), "--conflicts=markers")
    assert code == 1 and "conflict-marked" in out, out
    return ps, tree, pristine


def resolve(tree: Path, resolved: str) -> None:
    text = (tree / REQS).read_text(encoding="utf-8")
    (tree / REQS).write_text(MARKED.sub(lambda _m: resolved, text, count=1), encoding="utf-8")


def test_refresh_records_the_patch_as_applied_beside_the_one_that_applied_and_revert_takes_both_back(
    tmp_path: Path,
) -> None:
    ps, tree, pristine = marked(tmp_path)
    resolve(tree, "pandas>=2.0\n")
    code, out = run("refresh", "--target", str(tree), "--patchset", str(ps), "--json")
    assert code == 0, out
    (row,) = json.loads(out)
    assert row == {
        "patchset": "ps",
        "patch": "pin-pandas",
        "path": REQS,
        "context": row["context"],
        "recorded": True,
        "kind": "requirement",
        "deleted": False,
        "kept": False,
        "since": "",
    }
    record = json.loads((tree / ".patchctl" / "applied.json").read_text(encoding="utf-8"))
    assert sorted(e["patch"] for e in record["patches"]) == ["pin-pandas", "pin-ray"]
    (entry,) = [e for e in record["patches"] if e["patch"] == "pin-pandas"]
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00", entry["applied_at"]), entry
    assert not (tree / conflicts.STATE_PATH).exists()
    code, out = run("revert", "--target", str(tree), "--patchset", str(ps))
    assert code == 0 and snapshot(tree) == pristine, out


def test_refresh_without_conflicts_in_the_tree_says_where_they_come_from(tmp_path: Path) -> None:
    ps = tmp_path / "ps"
    ps.mkdir()
    (ps / "patchset.toml").write_text(TWO, encoding="utf-8")
    tree = build(tmp_path / "v1")
    before = snapshot(tree)
    code, out = run("refresh", "--target", str(tree), "--patchset", str(ps))
    assert code == 2, out
    assert f"{tree}: no conflicts wait there (no .patchctl/conflicts.json); write some with" in out
    assert snapshot(tree) == before


def test_refresh_names_the_patchset_of_a_conflict_that_was_not_given(tmp_path: Path) -> None:
    ps, tree, _ = marked(tmp_path)
    resolve(tree, "pandas>=2.0\n")
    other = tmp_path / "other"
    other.mkdir()
    (other / "patchset.toml").write_text(TWO.replace('name = "ps"', 'name = "other"'), encoding="utf-8")
    before = snapshot(tree)
    code, out = run("refresh", "--target", str(tree), "--patchset", str(other))
    assert code == 2, out
    assert (
        "patchset 'ps': it holds the conflicting patch 'pin-pandas' but was not given; pass it with --patchset" in out
    )
    assert snapshot(tree) == before and not (ps / "resolutions.toml").exists()


def test_refresh_does_not_write_into_a_built_in_patchset(tmp_path: Path) -> None:
    """A conflict of the built-in uky patchset: its resolution has nowhere to go."""
    _, tree, _ = marked(tmp_path)
    resolve(tree, "pandas>=2.0\n")
    state = tree / conflicts.STATE_PATH
    doc = json.loads(state.read_text(encoding="utf-8"))
    for c in doc["conflicts"]:
        c["patchset"], c["patch"] = "uky", "vllm-enable-log-requests"
    state.write_text(json.dumps(doc), encoding="utf-8")
    before = snapshot(tree)
    code, out = run("refresh", "--target", str(tree), "--patchset", "uky")
    assert code == 2, out
    assert "patchset 'uky': it is built into patchctl and cannot record resolutions" in out
    assert snapshot(tree) == before


def test_a_conflict_resolved_to_nothing_is_refused(tmp_path: Path) -> None:
    ps, tree, _ = marked(tmp_path)
    resolve(tree, "")
    before = snapshot(tree)
    code, out = run("refresh", "--target", str(tree), "--patchset", str(ps))
    assert code == 2 and "is resolved to nothing; keep upstream's text there to drop the patch" in out, out
    assert snapshot(tree) == before and not (ps / "resolutions.toml").exists()


def test_an_added_file_emptied_is_refused_but_a_deleted_file_emptied_is_deleted(tmp_path: Path) -> None:
    for kind in ("add-file", "delete-file"):
        fork_edit, up_edit, rel, *_ = CASES[kind]
        ps = capture(tmp_path / kind, fork_edit, kind)
        tree = build(tmp_path / kind / "v1", up_edit)
        run("apply", "--target", str(tree), "--patchset", str(ps), "--conflicts=markers")
        (tree / rel).write_text("", encoding="utf-8")
        code, out = run("refresh", "--target", str(tree), "--patchset", str(ps))
        if kind == "add-file":
            assert code == 2 and "is resolved to nothing" in out and (tree / rel).exists(), out
        else:
            assert code == 0 and "the file is deleted" in out and not (tree / rel).exists(), out


def test_a_marker_left_behind_is_named_by_its_line(tmp_path: Path) -> None:
    """The user kept their line and dropped every marker but one, on line 3 of the file."""
    ps, tree, _ = marked(tmp_path)
    resolve(tree, "pandas>=2.0\n=======\n")
    assert (tree / REQS).read_text(encoding="utf-8").splitlines()[2] == "======="
    code, out = run("refresh", "--target", str(tree), "--patchset", str(ps))
    assert code == 2 and "still has a conflict marker at line 3; resolve it" in out, out


def mark(pid: str, gap: list[str], after: list[str]) -> Marked:
    return Marked("ps", pid, "f.py", "", "", len(gap), digest(gap), len(after), digest(after))


def test_three_conflicts_apart_by_alike_lines_are_cut_where_each_gap_follows_the_one_before() -> None:
    marks = [mark("one", ["a\n"], ["\n"]), mark("two", ["\n"], ["\n"]), mark("three", ["\n"], ["z\n"])]
    assert _cut(["a\n", "x\n", "\n", "y\n", "\n", "w\n", "z\n"], marks) == [["x\n"], ["y\n"], ["w\n"]]


def test_a_last_conflict_kept_empty_at_the_end_of_the_file_is_cut() -> None:
    """The second conflict sits at the file's end with nothing after it and was resolved to
    upstream's nothing: the first conflict's untouched text then runs to the end of the file."""
    marks = [mark("one", ["a\n"], ["z\n"]), mark("two", [], [])]
    assert _cut(["a\n", "x\n", "z\n"], marks) == [["x\n"], []]


@pytest.mark.parametrize("lines", [["a\n", "x\n", "\n", "y\n"], ["b\n", "x\n", "\n", "y\n", "z\n"]])
def test_edits_outside_the_conflicts_are_refused(lines: list[str]) -> None:
    with pytest.raises(ConflictUnresolved):
        _cut(lines, [mark("one", ["a\n"], ["\n"]), mark("two", ["\n"], ["z\n"])])


def only_pandas(tmp_path: Path) -> Path:
    ps = tmp_path / "ps"
    ps.mkdir()
    (ps / "patchset.toml").write_text(TWO.split('[[patch]]\nid = "pin-ray"')[0], encoding="utf-8")
    return ps


def test_a_tree_whose_only_patch_conflicted_gets_a_record_naming_the_patchset(tmp_path: Path) -> None:
    """apply wrote no record (nothing applied); refresh's names the patchset, as apply's would."""
    ps = only_pandas(tmp_path)
    tree = build(tmp_path / "v1", {REQS: "numpy\npandas>=1.5\nray\n"})
    run("apply", "--target", str(tree), "--patchset", str(ps), "--conflicts=markers")
    assert not (tree / ".patchctl" / "applied.json").exists()
    resolve(tree, "pandas>=2.0\n")
    assert run("refresh", "--target", str(tree), "--patchset", str(ps))[0] == 0
    record = json.loads((tree / ".patchctl" / "applied.json").read_text(encoding="utf-8"))
    assert list(record["patchsets"]) == ["ps"] and record["patchsets"]["ps"]["source"] == str(ps)
    assert [e["patch"] for e in record["patches"]] == ["pin-pandas"]


def test_a_patch_recorded_before_its_conflict_is_recorded_once_and_reverts_to_upstreams_line(tmp_path: Path) -> None:
    """Applied on one version, its line then changed upstream (a pull into the tree): apply marks
    the conflict while the record still lists the patch; refresh replaces that entry."""
    ps = only_pandas(tmp_path)
    tree = build(tmp_path / "v0")
    assert run("apply", "--target", str(tree), "--patchset", str(ps))[0] == 0
    (tree / REQS).write_text("numpy\npandas>=1.5\nray\n", encoding="utf-8")
    run("apply", "--target", str(tree), "--patchset", str(ps), "--conflicts=markers")
    resolve(tree, "pandas>=2.0\n")
    assert run("refresh", "--target", str(tree), "--patchset", str(ps))[0] == 0
    record = json.loads((tree / ".patchctl" / "applied.json").read_text(encoding="utf-8"))
    assert [e["patch"] for e in record["patches"]] == ["pin-pandas"]
    code, out = run("revert", "--target", str(tree), "--patchset", str(ps))
    assert code == 0 and (tree / REQS).read_text(encoding="utf-8") == "numpy\npandas>=1.5\nray\n", out


# --- "keep upstream" (issue 38, requirement 5): refresh records it, and apply, verify and revert honour it


def versioned(root: Path, version: str | None, requirements: str) -> Path:
    """A tree whose requirements.txt is ``requirements``, declaring verl ``version`` (None: no version file)."""
    files: dict[str, str | None] = {REQS: requirements}
    if version is not None:
        files["verl/version/version"] = version + "\n"
    return build(root, files)


def kept_on(tmp_path: Path, version: str | None) -> tuple[Path, Path, dict[str, bytes], str]:
    """pin-pandas conflicted on a tree of ``version`` and was left as upstream's ``pandas>=1.5``;
    (patchset, tree, the tree before apply, refresh's output)."""
    ps = tmp_path / "ps"
    ps.mkdir()
    (ps / "patchset.toml").write_text(TWO, encoding="utf-8")
    tree = versioned(tmp_path / "v", version, "numpy\npandas>=1.5\nray\n")
    pristine = snapshot(tree)
    assert run("apply", "--target", str(tree), "--patchset", str(ps), "--conflicts=markers")[0] == 1
    resolve(tree, "pandas>=1.5\n")
    code, out = run("refresh", "--target", str(tree), "--patchset", str(ps))
    assert code == 0, out
    return ps, tree, pristine, out


def outcome(tree: Path, ps: Path, command: str = "apply") -> tuple[int, dict[str, dict[str, str]]]:
    code, out = run(command, "--target", str(tree), "--patchset", str(ps), "--json")
    doc = json.loads(out)
    return code, {r["patch"]: r for r in doc["results" if command == "apply" else "patches"]}


def test_keeping_upstreams_text_is_recorded_and_the_tree_verifies_and_reverts(tmp_path: Path) -> None:
    ps, tree, pristine, out = kept_on(tmp_path, "0.7.0")
    assert "pin-pandas in requirements.txt: kept upstream's text: recorded as keep-upstream" in out, out
    assert "the patch dropped on verl 0.7.0 and later" in out
    assert "refresh: 1 resolution(s) recorded (1 keeping upstream's text)" in out
    recorded = (ps / "resolutions.toml").read_text(encoding="utf-8")
    assert 'patch = "pin-pandas"' in recorded and "keep = true" in recorded and 'since = "0.7.0"' in recorded
    assert "after =" not in recorded, recorded
    record = json.loads((tree / ".patchctl" / "applied.json").read_text(encoding="utf-8"))
    assert [e["patch"] for e in record["patches"]] == ["pin-ray"]  # nothing of pin-pandas was applied
    code, rows = outcome(tree, ps, "verify")
    assert code == 0 and rows["pin-pandas"]["status"] == "superseded-upstream", rows
    assert rows["pin-pandas"]["reason"].startswith("requirements.txt: dropped from verl 0.7.0 on, upstream's text")
    code, out = run("revert", "--target", str(tree), "--patchset", str(ps))
    assert code == 0 and snapshot(tree) == pristine, out


@pytest.mark.parametrize(
    ("version", "upstream", "status"),
    [
        ("0.7.0", "pandas>=1.5", "superseded-upstream"),  # the same version, afresh
        ("0.9.1", "pandas>=1.8,<3", "superseded-upstream"),  # later, whatever upstream's line is by then
        ("0.6.0", "pandas", "applied"),  # earlier: the patch is still wanted there
        ("0.6.0", "pandas>=1.5", "conflict"),  # earlier: the same conflict is the user's to decide there
    ],
)
def test_keep_upstream_drops_the_patch_from_its_version_on(
    tmp_path: Path, version: str, upstream: str, status: str
) -> None:
    ps, *_ = kept_on(tmp_path, "0.7.0")
    other = versioned(tmp_path / "other", version, f"numpy\n{upstream}\nray\n")
    before = snapshot(other)
    code, rows = outcome(other, ps)
    assert rows["pin-pandas"]["status"] == status, rows
    assert code == (1 if status == "conflict" else 0)
    if status == "superseded-upstream":
        assert "dropped from verl 0.7.0 on" in rows["pin-pandas"]["reason"]
        assert (other / REQS).read_text(encoding="utf-8") == f"numpy\n{upstream}\nray==2.0\n"
        code, out = run("revert", "--target", str(other), "--patchset", str(ps))
        assert code == 0 and snapshot(other) == before, out


@pytest.mark.parametrize(("upstream", "status"), [("pandas>=1.5", "superseded-upstream"), ("pandas>=1.8", "conflict")])
def test_keep_upstream_on_trees_without_a_version_drops_the_patch_where_the_same_text_comes_back(
    tmp_path: Path, upstream: str, status: str
) -> None:
    ps, _, _, out = kept_on(tmp_path, None)
    assert "the patch dropped on trees where upstream's text there is this one" in out, out
    other = versioned(tmp_path / "other", None, f"numpy\n{upstream}\nray\n")
    code, rows = outcome(other, ps)
    assert rows["pin-pandas"]["status"] == status and code == (status == "conflict"), rows


def test_a_tree_without_a_record_where_upstreams_text_was_kept_reverts_without_a_conflict(tmp_path: Path) -> None:
    """Its record lost: revert finds pin-ray's line and takes it back; pin-pandas has nothing to undo."""
    ps, tree, pristine, _ = kept_on(tmp_path, "0.7.0")
    (tree / ".patchctl" / "applied.json").unlink()
    code, out = run("revert", "--target", str(tree), "--patchset", str(ps), "--json")
    assert code == 0, out
    assert [r["patch"] for r in json.loads(out)["results"]] == ["pin-ray"]
    assert snapshot(tree) == pristine


def test_a_recapture_keeps_a_keep_upstream_record(tmp_path: Path) -> None:
    fork_edit, up_edit, *_ = CASES["requirement"]
    ps = capture(tmp_path, fork_edit, "requirement")
    tree = versioned(tmp_path / "v1", "0.7.0", up_edit[REQS])
    assert run("apply", "--target", str(tree), "--patchset", str(ps), "--conflicts=markers")[0] == 1
    resolve(tree, "pandas>=1.5\n")
    assert run("refresh", "--target", str(tree), "--patchset", str(ps))[0] == 0
    recorded = (ps / "resolutions.toml").read_text(encoding="utf-8")
    code, out = run(
        "capture", "--from", str(tmp_path / "fork"), "--base", str(tmp_path / "base"), "--all", "--out", str(ps)
    )
    assert code == 0 and "kept 1 conflict resolution(s)" in out, out
    assert (ps / "resolutions.toml").read_text(encoding="utf-8") == recorded
    code, rows = outcome(versioned(tmp_path / "v2", "0.8.0", up_edit[REQS]), ps)
    assert code == 0 and [r["status"] for r in rows.values()] == ["superseded-upstream"], rows


def test_retire_takes_a_kept_patch_out_with_its_record(tmp_path: Path) -> None:
    """The big jump's last step: a patch dropped by "keep upstream" is superseded, so retire cuts it
    from the patchset, and its entry in resolutions.toml goes with it (one naming no patch is refused)."""
    ps, *_ = kept_on(tmp_path, "0.7.0")
    later = versioned(tmp_path / "later", "0.8.0", "numpy\npandas>=1.8\nray\n")
    code, out = run("retire", "--target", str(later), "--patchset", str(ps), "--out", str(tmp_path / "new"))
    assert code == 1 and "retired pin-pandas" in out and "wrote " in out, out  # 1: it has no drop_when
    assert not (tmp_path / "new" / "resolutions.toml").exists()
    code, out = run("list", "--patchset", str(tmp_path / "new"), "--json")
    assert code == 0 and [p["id"] for p in json.loads(out)[0]["patches"]] == ["pin-ray"], out
