"""Apply and the user's uncommitted work: a file with edits of the user's is refused unless
``--force``; a file patchctl wrote itself (its sha256 in the record) is not "theirs"."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import git
from tests.faults import shared_file
from tests.faults.helpers import run, snapshot

from patchctl.fsutil import sha256_file

#: the shared fixtures (pytest finds them by these names in the module)
tree, ps = shared_file.tree, shared_file.ps

INIT = "verl/__init__.py"


def test_a_file_with_the_users_edits_is_refused_without_force(tree: Path, ps: Path) -> None:
    (tree / INIT).write_text((tree / INIT).read_text() + "MINE = 1\n")
    before = snapshot(tree)
    code, out = run("apply", "-t", str(tree), "-p", str(ps))
    assert code == 2
    assert f"uncommitted changes in files a patch would change: {INIT}; commit or stash them, or pass --force" in out
    assert snapshot(tree) == before
    code, out = run("apply", "-t", str(tree), "-p", str(ps), "--force")
    assert code == 0, out
    assert (tree / INIT).read_text().endswith("MINE = 1\n") and "# T: set before" in (tree / INIT).read_text()


def test_a_file_patchctl_wrote_is_its_own_until_the_user_edits_it(tree: Path, ps: Path) -> None:
    assert run("apply", "-t", str(tree), "-p", str(ps), "--only", "init-prelude")[0] == 0
    code, out = run("apply", "-t", str(tree), "-p", str(ps), "--only", "load-mode", "--dry-run")
    assert code == 0, out  # dirty to git, but exactly as patchctl left it
    (tree / INIT).write_text((tree / INIT).read_text() + "MINE = 1\n")
    before = snapshot(tree)
    code, out = run("apply", "-t", str(tree), "-p", str(ps), "--only", "load-mode")
    assert code == 2 and "uncommitted changes in files a patch would change" in out
    assert snapshot(tree) == before


def test_a_deleted_file_a_patch_adds_back_has_nothing_to_lose(tree: Path, tmp_path: Path) -> None:
    """Dirty to git (deleted), but there is no edit of the user's in it to overwrite."""
    from tests.faults.helpers import make_patchset

    ps = make_patchset(tmp_path / "adds", n_files=1, prelude=False)
    (tree / "top000.md").write_text("committed once\n")
    git(tree, "add", "top000.md")
    git(tree, "commit", "-qm", "a file the patch will add")
    (tree / "top000.md").unlink()
    code, out = run("apply", "-t", str(tree), "-p", str(ps))
    assert code == 0, out
    assert (tree / "top000.md").read_text() == "file 0\n"


def test_commit_puts_the_change_on_a_branch_and_reports_its_sha(tree: Path, ps: Path) -> None:
    code, out = run("apply", "-t", str(tree), "-p", str(ps), "--commit", "--json")
    assert code == 0, out
    doc = json.loads(out)
    assert doc["commit"] == git(tree, "rev-parse", "patchctl/fault").strip()
    assert git(tree, "status", "--porcelain") == ""


def test_revert_only_keeps_the_hash_of_an_untouched_files_entry(tree: Path, tmp_path: Path) -> None:
    """Entries of files the partial revert does not touch keep their sha256_after."""
    from tests.faults.helpers import make_patchset

    ps = make_patchset(tmp_path / "both", n_files=1)
    assert run("apply", "-t", str(tree), "-p", str(ps))[0] == 0
    assert run("revert", "-t", str(tree), "-p", str(ps), "--only", "init-prelude")[0] == 0
    entries = {e["patch"]: e for e in json.loads((tree / ".patchctl" / "applied.json").read_text())["patches"]}
    assert set(entries) == {"file-000"}
    assert entries["file-000"]["sha256_after"] == sha256_file(tree / "top000.md")


def test_an_apply_with_nothing_to_do_writes_nothing_not_even_the_record(tree: Path, ps: Path) -> None:
    assert run("apply", "-t", str(tree), "-p", str(ps))[0] == 0
    record = tree / ".patchctl" / "applied.json"
    record.write_text(json.dumps(json.loads(record.read_text()), indent=4))  # the user's own formatting
    before = snapshot(tree)
    code, out = run("apply", "-t", str(tree), "-p", str(ps), "--json")
    assert code == 0 and json.loads(out)["written"] == []
    assert snapshot(tree) == before
