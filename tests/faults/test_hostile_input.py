"""Hostile or broken input: paths that lead out of the tree, damaged records, bad regexes, and
``--commit`` where it cannot commit. Each is one line, a non-zero exit, and nothing written
anywhere, inside the tree or out of it."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from tests.faults.helpers import GIT_IDENT, make_patchset, make_tree, one_error, run, snapshot


def _escaping_patchset(root: Path, target: str) -> Path:
    (root / "files").mkdir(parents=True)
    (root / "files" / "x.md").write_text("x\n")
    (root / "patchset.toml").write_text(f'''[patchset]
name = "evil"
tag = "T"
[[patch]]
id = "escape"
title = "t"
why = "w"
kind = "add-file"
target = ["{target}"]
[patch.params]
source = "files/x.md"
''')
    return root


@pytest.mark.parametrize(
    "target, problem",
    [
        ("../ESCAPED.txt", "climbs out of the tree with .."),
        ("docs/../../ESCAPED.txt", "climbs out of the tree with .."),
        ("/tmp/ESCAPED-patchctl.txt", "is an absolute path"),
    ],
)
@pytest.mark.parametrize("git", [True, False])
def test_a_target_outside_the_tree_is_refused_at_load(tmp_path: Path, target: str, problem: str, git: bool) -> None:
    tree = make_tree(tmp_path / "tree", git=git)
    ps = _escaping_patchset(tmp_path / "ps", target)
    outside = snapshot(tmp_path)
    for cmd in (["apply", "-t", str(tree), "--force"], ["list"], ["verify", "-t", str(tree)]):
        code, out = run(*cmd, "-p", str(ps))
        assert code == 2
        assert one_error(out) == (
            f"error: {ps / 'patchset.toml'}: patch 'escape', key 'patch[0].target[0]': "
            f"{target!r} {problem}; write a path relative to the tree's root, inside it"
        )
    assert snapshot(tmp_path) == outside
    assert not Path("/tmp/ESCAPED-patchctl.txt").exists()


def test_an_add_file_source_outside_the_patchset_is_refused(tmp_path: Path) -> None:
    ps = _escaping_patchset(tmp_path / "ps", "ok.md")
    (ps / "patchset.toml").write_text((ps / "patchset.toml").read_text().replace("files/x.md", "../secret"))
    code, out = run("list", "-p", str(ps))
    assert code == 2
    assert "key 'params.source': '../secret' climbs out of the tree with ..; ship the file inside" in one_error(out)


def test_a_symlink_leading_out_is_refused_with_the_patch_named(tmp_path: Path) -> None:
    tree = make_tree(tmp_path / "tree", git=False)
    victim = tmp_path / "victim"
    victim.mkdir()
    os.symlink(victim, tree / "docs")
    ps = _escaping_patchset(tmp_path / "ps", "docs/QUICK_FIX.md")
    code, out = run("apply", "-t", str(tree), "-p", str(ps))
    assert code == 2
    line = one_error(out)
    assert "patch 'escape': refusing to touch 'docs/QUICK_FIX.md': it leads out of the tree through a symlink" in line
    assert list(victim.iterdir()) == []


def test_a_record_entry_outside_the_tree_is_never_used(tmp_path: Path) -> None:
    """A copied or tampered record must not make revert delete files elsewhere."""
    tree = make_tree(tmp_path / "tree")
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "QUICK_FIX.md").write_text("not patchctl's\n")
    assert run("apply", "-t", str(tree), "--only", "quick-fix")[0] == 0
    record = tree / ".patchctl" / "applied.json"
    doc = json.loads(record.read_text())
    doc["patches"][0]["path"] = "../victim/QUICK_FIX.md"
    record.write_text(json.dumps(doc))
    before = snapshot(tmp_path)
    code, out = run("revert", "-t", str(tree))
    assert code == 2
    assert one_error(out) == (
        f"error: {record}: the apply record is damaged (patch 'quick-fix' names '../victim/QUICK_FIX.md', which "
        "climbs out of the tree with ..); restore it with git (git checkout -- .patchctl/applied.json), or delete "
        "it and run `patchctl revert` again, which then reverts every patch it finds intact"
    )
    assert snapshot(tmp_path) == before
    # the advice works: without the record, revert removes what it finds intact
    record.unlink()
    assert run("revert", "-t", str(tree))[0] == 0
    assert not (tree / "QUICK_FIX.md").exists()
    assert (victim / "QUICK_FIX.md").read_text() == "not patchctl's\n"


def test_a_bad_upstream_regex_is_a_manifest_error_everywhere(tmp_path: Path) -> None:
    tree = make_tree(tmp_path / "tree")
    ps = make_patchset(tmp_path / "ps", n_files=0)
    (ps / "patchset.toml").write_text(
        (ps / "patchset.toml").read_text() + '[patch.upstream]\nkind = "regex"\npattern = "(["\n'
    )
    expected = (
        f"error: {ps / 'patchset.toml'}: patch 'init-prelude', key 'patch[0].upstream.pattern': "
        "not a regular expression (unterminated character set at position 1); fix the pattern (Python re syntax)"
    )
    for cmd in (["list"], ["apply", "-t", str(tree)]):
        code, out = run(*cmd, "-p", str(ps))
        assert (code, one_error(out)) == (2, expected)


def test_commit_refuses_before_writing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    plain = make_tree(tmp_path / "plain", git=False)
    before = snapshot(plain)
    code, out = run("apply", "-t", str(plain), "--commit")
    assert code == 2
    assert one_error(out) == (
        f"error: {plain}: --commit refused: it is not a git repository; run `git init` there "
        "first, or drop --commit (nothing was written)"
    )
    assert snapshot(plain) == before

    tree = make_tree(tmp_path / "tree")
    subprocess.run(["git", "-C", str(tree), "branch", "patchctl/uky"], check=True)
    before = snapshot(tree)
    code, out = run("apply", "-t", str(tree), "--commit")
    assert (code, snapshot(tree)) == (2, before)
    assert "branch 'patchctl/uky' already exists; delete it or pass --branch NAME (nothing was written)" in one_error(
        out
    )

    for k in GIT_IDENT:
        monkeypatch.delenv(k)
    monkeypatch.setenv("HOME", str(tmp_path / "empty-home"))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("EMAIL", "")
    code, out = run("apply", "-t", str(tree), "--commit", "--branch", "mine")
    if code == 0:  # this host's name gives git an e-mail address: git can commit, so we may too
        pytest.skip("git derives an identity from this host's name")
    assert code == 2
    assert "--commit refused: git has no identity to commit with; run git config --global user.name" in one_error(out)
    assert snapshot(tree) == before


def test_a_refused_commit_puts_the_files_back(tmp_path: Path) -> None:
    """git says no (``git add`` of a file the tree's .gitignore names; hooks never run, so they
    cannot): the files, the branch and the index are as they were."""
    tree = make_tree(tmp_path / "tree")
    (tree / ".gitignore").write_text("top000.md\n")
    env = {**os.environ, **GIT_IDENT}
    subprocess.run(["git", "-C", str(tree), "add", ".gitignore"], check=True, env=env)
    subprocess.run(["git", "-C", str(tree), "commit", "-qm", "ignore"], check=True, env=env)
    ps = make_patchset(tmp_path / "ps", 1)
    before = snapshot(tree)
    code, out = run("apply", "-t", str(tree), "-p", str(ps), "--commit")
    assert code == 2
    assert "git refused the commit on branch 'patchctl/fault'" in one_error(out)
    assert snapshot(tree) == before
    git = ["git", "-C", str(tree)]
    assert subprocess.run([*git, "branch", "--show-current"], capture_output=True, text=True).stdout.strip() == "main"
    assert "patchctl/fault" not in subprocess.run([*git, "branch"], capture_output=True, text=True).stdout
    assert subprocess.run([*git, "status", "--porcelain"], capture_output=True, text=True).stdout == ""
