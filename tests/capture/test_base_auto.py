"""``capture --base auto --repo CLONE`` (issue 38, requirement 6): the upstream commit a fork was
taken from, found in a real git repository built here, and named in ``captured_against`` by
commit, date and nearest releases, never by the tree's stale version file.

The upstream history (first-parent line of main, oldest first)::

    c1  tag v1.0   a.py, b.py, verl/version/version "0.1" (never bumped, as in early verl)
    c2             a.py: one line more
    m3             merge of a side branch that edits b.py    <- the fork is taken here
    c4  tag v1.1   a.py: upstream's own later line
    release        a branch from c1 that edits b.py its own way

The fork is m3's tree plus its own tagged edit of a.py. c4 then differs from the fork in the
same one path as m3 (a.py): only the lines tell them apart, which is how Search-R1's
base came out 7 commits too new when ties went to the newest commit.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from tests.clirun import run
from tests.conftest import git

from patchctl.capture import base

A = "".join(f"a{i} = {i}\n" for i in range(10))
B = "".join(f"b{i} = {i}\n" for i in range(10))
MERGED = B.replace("b5 = 5", "b5 = 50")


def at(mp: pytest.MonkeyPatch, date: str) -> None:
    """Commits made from now on are dated ``date`` (noon UTC), author and committer alike."""
    for key in ("GIT_AUTHOR_DATE", "GIT_COMMITTER_DATE"):
        mp.setenv(key, f"{date}T12:00:00+00:00")


def commit(repo: Path, files: dict[str, str], message: str) -> str:
    for rel, text in files.items():
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text(text, encoding="utf-8")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", message)
    return git(repo, "rev-parse", "HEAD").strip()


@pytest.fixture
def upstream(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, dict[str, str]]:
    repo = tmp_path / "up"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    shas = {}
    at(monkeypatch, "2025-01-01")
    shas["c1"] = commit(repo, {"a.py": A, "b.py": B, "verl/version/version": "0.1\n"}, "c1")
    git(repo, "tag", "v1.0")
    at(monkeypatch, "2025-01-02")
    shas["c2"] = commit(repo, {"a.py": A + "a10 = 10\n"}, "c2")
    git(repo, "checkout", "-qb", "side")
    at(monkeypatch, "2025-01-03")
    commit(repo, {"b.py": MERGED}, "side")
    git(repo, "checkout", "-q", "main")
    git(repo, "merge", "-q", "--no-ff", "-m", "m3", "side")
    shas["m3"] = git(repo, "rev-parse", "HEAD").strip()
    at(monkeypatch, "2025-01-04")
    shas["c4"] = commit(repo, {"a.py": A + "a10 = 10\na11 = 11\na12 = 12\n"}, "c4")
    git(repo, "tag", "v1.1")
    git(repo, "branch", "-qD", "side")
    git(repo, "checkout", "-qb", "release", shas["c1"])
    at(monkeypatch, "2025-01-05")
    shas["r1"] = commit(repo, {"b.py": B + "b_release = 1\n"}, "r1")
    git(repo, "checkout", "-q", "main")
    return repo, shas


def fork_of(tmp_path: Path, upstream: Path, sha: str, edits: dict[str, str]) -> Path:
    fork = tmp_path / "fork"
    git(upstream, "worktree", "add", "-q", "--detach", str(tmp_path / "wt"), sha)
    shutil.copytree(tmp_path / "wt", fork, ignore=shutil.ignore_patterns(".git"))
    for rel, text in edits.items():
        (fork / rel).write_text(text, encoding="utf-8")
    return fork


def test_a_commit_tied_on_paths_is_told_apart_by_lines_and_the_older_wins_only_by_them(
    tmp_path: Path, upstream: tuple[Path, dict[str, str]]
) -> None:
    repo, shas = upstream
    fork = {"a.py": A + "a10 = 10\nours = 1  # Uky\n", "b.py": MERGED, "verl/version/version": "0.1\n"}
    found = base.find(repo, {k: v.encode() for k, v in fork.items()})
    assert found.best.commit == shas["m3"], found
    by = {c.commit: c for c in found.shown}
    # c4: the same one path differs, but with upstream's two later lines besides the fork's
    assert (by[shas["m3"]].paths, by[shas["m3"]].lines) == (1, 1)
    assert (by[shas["c4"]].paths, by[shas["c4"]].lines) == (1, 3)
    assert [c.commit for c in found.shown][:2] == [shas["m3"], shas["c4"]]


def test_a_merge_on_the_first_parent_line_counts_with_its_changes(
    tmp_path: Path, upstream: tuple[Path, dict[str, str]]
) -> None:
    """The fork holds the merged side branch's b.py: only m3 and later have it."""
    repo, shas = upstream
    fork = {"a.py": A + "a10 = 10\n", "b.py": MERGED}
    found = base.find(repo, {k: v.encode() for k, v in fork.items()})
    assert (found.best.commit, found.best.paths, found.best.lines) == (shas["m3"], 0, 0), found


def test_a_commit_of_a_release_branch_is_found(tmp_path: Path, upstream: tuple[Path, dict[str, str]]) -> None:
    repo, shas = upstream
    found = base.find(repo, {"a.py": A.encode(), "b.py": (B + "b_release = 1\n").encode()})
    assert (found.best.commit, found.best.paths) == (shas["r1"], 0), found


def test_capture_base_auto_shows_the_candidates_and_names_the_commit_its_date_and_releases(
    tmp_path: Path, upstream: tuple[Path, dict[str, str]]
) -> None:
    repo, shas = upstream
    fork = fork_of(tmp_path, repo, shas["m3"], {"a.py": A + "a10 = 10\nours = 1  # Uky: ours\n"})
    out = tmp_path / "ps"
    code, text = run("capture", "--from", str(fork), "--base", "auto", "--repo", str(repo), "--out", str(out))
    assert code == 0, text
    assert "compared with FORK (fewest paths, then fewest lines)" in text
    rows = [ln for ln in text.splitlines() if shas["m3"][:12] in ln or shas["c4"][:12] in ln]
    assert f"* {shas['m3'][:12]}" in rows[0] and "2025-01-03" in rows[0] and shas["c4"][:12] in rows[1], text
    named = f"verl {shas['m3'][:12]} (2025-01-03; v1.0 + 3 commits, before v1.1)"
    assert f"capture {fork} against {named}" in text
    manifest = (out / "patchset.toml").read_text(encoding="utf-8")
    assert f'captured_against = "{named}"' in manifest and "verl 0.1" not in manifest, manifest
    code, text = run("capture", "--from", str(fork), "--base", "auto", "--repo", str(repo), "--dry-run", "--json")
    search = json.loads(text)["base_search"]
    assert search["best"] == shas["m3"] and search["candidates"][0] == {
        "commit": shas["m3"],
        "date": "2025-01-03T12:00:00+00:00",
        "paths": 1,
        "lines": 1,
    }


def test_a_tagged_commit_is_named_by_its_tag(tmp_path: Path, upstream: tuple[Path, dict[str, str]]) -> None:
    repo, shas = upstream
    assert base.describe(repo, shas["c4"]) == f"verl {shas['c4'][:12]} (2025-01-04; v1.1)"


@pytest.mark.parametrize(
    ("args", "says"),
    [
        ([], "capture: --base auto needs --repo CLONE, a git clone of upstream verl to search"),
        (
            ["--repo", "{tmp}/fork"],
            "--repo {tmp}/fork: not a git clone (a bare repository or a work tree's top folder); "
            "pass a clone of upstream verl (git clone https://github.com/volcengine/verl)",
        ),
    ],
)
def test_base_auto_without_a_repository_is_refused_in_one_line(tmp_path: Path, args: list[str], says: str) -> None:
    fork = tmp_path / "fork"
    (fork / "verl").mkdir(parents=True)
    (fork / "verl" / "x.py").write_text("x = 1  # Uky\n", encoding="utf-8")
    argv = [a.replace("{tmp}", str(tmp_path)) for a in args]
    code, text = run("capture", "--from", str(fork), "--base", "auto", *argv, "--out", str(tmp_path / "ps"))
    assert code == 2 and text.strip() == "error: " + says.replace("{tmp}", str(tmp_path)), text
    assert not (tmp_path / "ps").exists()


def test_changed_lines_counts_a_unified_diffs_minus_and_plus_lines() -> None:
    assert base.changed_lines(b"a\nb\nc\n", b"a\nB\nc\nd\n") == 3
    assert base.changed_lines(b"", b"x\ny\n") == 2


def test_files_the_fork_lacks_do_not_count(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The fork deleted verl's docs, as forks do. Counted, they would make the older commit (fewer
    docs yet) look nearer; only the fork's own paths tell its age."""
    repo = tmp_path / "docs"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    at(monkeypatch, "2025-02-01")
    old = commit(repo, {"a.py": A, "docs/1.md": "one\n"}, "u1")
    new = commit(repo, {"a.py": A + "a10 = 10\n", "docs/2.md": "two\n", "docs/3.md": "three\n"}, "u2")
    found = base.find(repo, {"a.py": (A + "a10 = 10\n").encode()})
    assert [(c.commit, c.paths) for c in found.shown] == [(new, 0), (old, 1)], found


def test_among_commits_tied_on_paths_the_fewest_lines_win_even_when_newer(
    tmp_path: Path, upstream: tuple[Path, dict[str, str]]
) -> None:
    """Taken at c4: m3 differs in the same one path (a.py), by c4's two lines and the fork's."""
    repo, shas = upstream
    fork = {"a.py": A + "a10 = 10\na11 = 11\na12 = 12\nours = 1  # Uky\n", "b.py": MERGED}
    found = base.find(repo, {k: v.encode() for k, v in fork.items()})
    assert [(c.commit, c.paths, c.lines) for c in found.shown][:2] == [(shas["c4"], 1, 1), (shas["m3"], 1, 3)]


def test_a_file_upstream_deleted_differs_from_the_forks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = tmp_path / "gone"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    at(monkeypatch, "2025-03-01")
    kept = commit(repo, {"a.py": A, "b.py": B}, "u1")
    (repo / "b.py").unlink()
    gone = commit(repo, {}, "u2: b.py deleted")
    found = base.find(repo, {"a.py": A.encode(), "b.py": B.encode()})
    assert [(c.commit, c.paths) for c in found.shown] == [(kept, 0), (gone, 1)], found


def test_a_repository_without_commits_is_refused_in_one_line(tmp_path: Path) -> None:
    repo = tmp_path / "empty"
    repo.mkdir()
    git(repo, "init", "-q")
    fork = tmp_path / "fork"
    (fork / "verl").mkdir(parents=True)
    (fork / "verl" / "x.py").write_text("x = 1  # Uky\n", encoding="utf-8")
    code, text = run("capture", "--from", str(fork), "--base", "auto", "--repo", str(repo), "--dry-run")
    assert code == 2, text
    assert text.strip() == (
        f"error: --repo {repo}: holds no commit to compare the fork with; pass a clone of upstream "
        "(git clone https://github.com/volcengine/verl)"
    )


def test_a_file_over_a_mebibyte_is_counted_by_its_size_not_diffed() -> None:
    big = b"x = 1\n" * 200_000  # 1.2 MB: diffing it would cost seconds per candidate
    assert base.changed_lines(big, big + b"y = 2\n") == 400_001


def _git_children() -> list[int]:
    """This process's children named git, running or not yet waited for (zombies too)."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            name, _, rest = Path(f"/proc/{pid}/stat").read_text().partition(")")
        except OSError:
            continue
        if name.endswith("(git") and int(rest.split()[1]) == os.getpid():
            found.append(int(pid))
    return found


def test_no_git_process_is_left_running(tmp_path: Path, upstream: tuple[Path, dict[str, str]]) -> None:
    repo, _ = upstream
    base.find(repo, {"a.py": b"other\n", "b.py": B.encode()})
    assert _git_children() == []


def test_a_commit_is_named_without_a_tag_near_and_by_a_tag_with_dashes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = tmp_path / "tags"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    at(monkeypatch, "2025-04-01")
    first = commit(repo, {"a.py": A}, "u1")
    second = commit(repo, {"a.py": A + "a10 = 10\n"}, "u2")
    assert base.describe(repo, second) == f"verl {second[:12]} (2025-04-01; no release tag before it)"
    said = f"verl {second[:12]} (2025-04-01; no release tag before it, its version file says 0.1)"
    assert base.describe(repo, second, "0.1") == said  # quoted as such, only where no tag is near
    git(repo, "tag", "release-2025-04", first)
    named = f"verl {second[:12]} (2025-04-01; release-2025-04 + 1 commits)"
    assert base.describe(repo, second) == base.describe(repo, second, "0.1") == named


def test_the_one_nearest_commit_wins_over_a_crowd_of_next_nearest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """f0..f7 edited one per commit, with five docs-only commits before the last: six commits
    differ from the fork in one path, and only the last in none."""
    repo = tmp_path / "crowd"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    at(monkeypatch, "2025-05-01")
    files = {f"f{i}.py": f"v = {i}\n" for i in range(8)}
    commit(repo, files, "start")
    for i in range(7):
        commit(repo, {f"f{i}.py": f"v = {i}0\n"}, f"f{i}")
    for i in range(5):
        commit(repo, {"docs.md": f"{i}\n"}, f"docs {i}")
    last = commit(repo, {"f7.py": "v = 70\n"}, "f7")
    fork = {f"f{i}.py": f"v = {i}0\n".encode() for i in range(8)}
    found = base.find(repo, fork)
    assert (found.best.commit, found.best.paths, found.best.lines) == (last, 0, 0), found
    assert [c.paths for c in found.shown] == [0, 1, 1, 1, 1]
