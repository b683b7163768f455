"""The conflict workflow (issue 27): apply --conflicts=markers writes a 3-way view at the best
candidate place, verify says the tree needs resolution, refresh records the resolution in the
patchset, and apply replays it on the next tree where the same conflict comes back (rerere)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from tests.clirun import run
from tests.conftest import git

TRACKING = "verl/utils/tracking.py"
LINE = '        data = {"step": step, "data": data}\n'
FORK = '        data = {"step": step, "data": data, "uky": 1}  # Uky: mark our runs\n'
UPSTREAM = '        data = {"step": step, "data": data, "ts": 0}\n'
RESOLVED = '        data = {"step": step, "data": data, "ts": 0, "uky": 1}  # Uky: mark our runs\n'
#: upstream renames the loop variable the call-site patch is anchored after
LOOP = "        for default_backend, logger_instance in self.logger.items():\n"
LOOP2 = "        for name, logger_instance in self.logger.items():\n"
CALL = "                logger_instance.log(data=data, step=step)\n"


def replace(tree: Path, old: str, new: str) -> None:
    """Upstream's (or the fork's) edit; committed where the tree is a git checkout."""
    path = tree / TRACKING
    text = path.read_text(encoding="utf-8")
    assert text.count(old) == 1, old
    path.write_text(text.replace(old, new), encoding="utf-8")
    if (tree / ".git").exists():
        git(tree, "commit", "-qam", "upstream")


@pytest.fixture(scope="module")
def patchset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from patchctl import releases

    fork = tmp_path_factory.mktemp("fork") / "verl"
    shutil.copytree(releases.materialize("0.6.1"), fork, symlinks=True)
    replace(fork, LINE, FORK)
    out = tmp_path_factory.mktemp("ps") / "mine"
    code, text = run("capture", "--from", str(fork), "--base", "verl==0.6.1", "--out", str(out))
    assert code == 0, text
    return out


@pytest.fixture
def upstream(release_tree) -> Path:
    tree = release_tree("0.6.1")
    replace(tree, LINE, UPSTREAM)
    return tree


def test_markers_refresh_and_replay(patchset: Path, upstream: Path, release_tree, tmp_path: Path) -> None:
    ps = tmp_path / "ps"
    shutil.copytree(patchset, ps)
    pristine = (upstream / TRACKING).read_text(encoding="utf-8")
    code, out = run("apply", "--target", str(upstream), "--patchset", str(ps))
    assert code == 1 and "conflict" in out and (upstream / TRACKING).read_text(encoding="utf-8") == pristine

    code, out = run("apply", "--target", str(upstream), "--patchset", str(ps), "--conflicts=markers")
    assert code == 1 and "conflict-marked" in out and "patchctl refresh" in out
    marked = (upstream / TRACKING).read_text(encoding="utf-8")
    view = marked[marked.index("<<<<<<< upstream") : marked.index(">>>>>>>")]
    assert view.index(UPSTREAM) < view.index("||||||| ") < view.index(LINE) < view.index("=======") < view.index(FORK)
    code, out = run("verify", "--target", str(upstream), "--patchset", str(ps))
    assert code == 1 and "needs resolution" in out
    code, out = run("verify", "--target", str(upstream), "--json")  # another patchset: still not clean
    assert code == 1 and len(json.loads(out)["conflicts"]) == 1
    code, out = run("apply", "--target", str(upstream), "--patchset", str(ps))
    assert code == 2 and "wait for resolution" in out

    start = marked.index("<<<<<<< upstream")
    end = marked.index("\n", marked.index(">>>>>>>")) + 1
    (upstream / TRACKING).write_text(marked[:start] + RESOLVED + marked[end:], encoding="utf-8")
    code, out = run("refresh", "--target", str(upstream), "--patchset", str(ps))
    assert code == 0, out
    assert RESOLVED in (ps / "resolutions.toml").read_text(encoding="utf-8")
    assert not (upstream / ".patchctl" / "conflicts.json").exists()
    code, out = run("verify", "--target", str(upstream), "--patchset", str(ps))
    assert code == 0, out
    code, out = run("revert", "--target", str(upstream), "--patchset", str(ps))
    assert code == 0, out
    assert (upstream / TRACKING).read_text(encoding="utf-8") == pristine

    again = release_tree("0.6.0")  # another release where upstream made the same change: replayed
    replace(again, LINE, UPSTREAM)
    code, out = run("apply", "--target", str(again), "--patchset", str(ps), "--json")
    assert code == 0, out
    (row,) = json.loads(out)["results"]
    assert row["status"] == "applied" and "resolution recorded on verl 0.6.1" in row["reason"]
    assert RESOLVED in (again / TRACKING).read_text(encoding="utf-8")


def test_refresh_refuses_markers_left_and_edits_outside(patchset: Path, upstream: Path, tmp_path: Path) -> None:
    ps = tmp_path / "ps"
    shutil.copytree(patchset, ps)
    run("apply", "--target", str(upstream), "--patchset", str(ps), "--conflicts=markers")
    code, out = run("refresh", "--target", str(upstream), "--patchset", str(ps))
    assert code == 2 and "still has a conflict marker at line" in out
    marked = (upstream / TRACKING).read_text(encoding="utf-8")
    start, end = marked.index("<<<<<<< upstream"), marked.index("\n", marked.index(">>>>>>>")) + 1
    (upstream / TRACKING).write_text("# edited\n" + marked[:start] + RESOLVED + marked[end:], encoding="utf-8")
    code, out = run("refresh", "--target", str(upstream), "--patchset", str(ps))
    assert code == 2 and "has lines above it edited too" in out
    assert not (ps / "resolutions.toml").exists()


@pytest.mark.parametrize(
    ("fork_edit", "upstream_edit", "anchor"),
    [  # an insertion after a statement whose loop upstream renamed; one at the top of a body whose first line changed
        ((CALL, CALL + "        self.flush_all()  # Uky\n"), (LOOP, LOOP2), LOOP2),
        ((LINE, "        self.flush_all()  # Uky\n" + LINE), (LINE, UPSTREAM), UPSTREAM),
    ],
)
def test_a_conflict_whose_anchor_changed_gets_the_most_alike_place(
    release_tree, tmp_path: Path, fork_edit: tuple[str, str], upstream_edit: tuple[str, str], anchor: str
) -> None:
    from patchctl import releases

    fork = tmp_path / "fork"
    shutil.copytree(releases.materialize("0.6.1"), fork, symlinks=True)
    replace(fork, *fork_edit)
    run("capture", "--from", str(fork), "--base", "verl==0.6.1", "--out", str(tmp_path / "ps"))
    # upstream's change is lines away from the edit, so the 3-way fallback would merge it (as git
    # does): without the base texts the kind's own conflict and its marker place are what is tested
    shutil.rmtree(tmp_path / "ps" / "bases")
    tree = release_tree("0.6.1")
    replace(tree, *upstream_edit)
    code, out = run("apply", "--target", str(tree), "--patchset", str(tmp_path / "ps"), "--conflicts=markers", "--json")
    (row,) = json.loads(out)["results"]
    assert code == 1 and row["status"] == "conflict-marked" and "reads most like its anchor" in row["reason"], row
    text = (tree / TRACKING).read_text(encoding="utf-8")
    view = text[text.index("<<<<<<< upstream") : text.index(">>>>>>>")]
    assert "self.flush_all()" in view
    assert (text.index(anchor) < text.index("<<<<<<<")) == (anchor == LOOP2)


@pytest.mark.parametrize("tamper", ["before", "patch"])
def test_a_tampered_resolution_is_refused(patchset: Path, tmp_path: Path, tamper: str) -> None:
    ps = tmp_path / "ps"
    shutil.copytree(patchset, ps)
    pid = json.loads(run("list", "--patchset", str(ps), "--json")[1])[0]["patches"][0]["id"]
    from patchctl.patchsets import resolutions
    from patchctl.patchsets.model import Resolution

    resolutions.record(ps, pid, Resolution(resolutions.context_of(UPSTREAM), "", UPSTREAM, RESOLVED))
    file = ps / "resolutions.toml"
    text = file.read_text(encoding="utf-8")
    file.write_text(
        text.replace('"ts": 0}\n', '"ts": 2}\n')
        if tamper == "before"
        else text.replace(f'patch = "{pid}"', 'patch = "../../etc"'),
        encoding="utf-8",
    )
    code, out = run("list", "--patchset", str(ps))
    assert code == 2 and "resolutions.toml" in out
    assert ("does not match the sha256" if tamper == "before" else "is no patch of the manifest") in out


def test_matrix_shows_one_line_per_conflict_and_the_diff_behind_a_flag(patchset: Path, release_tree) -> None:
    repo = release_tree("0.6.1")
    git(repo, "tag", "v1")
    replace(repo, LINE, UPSTREAM)
    git(repo, "tag", "v2")
    args = ("matrix", "--repo", str(repo), "--versions", "v1,v2", "--patchset", str(patchset))
    code, out = run(*args)
    (line,) = [ln for ln in out.splitlines() if " on v2: conflict in " in ln]
    assert code == 1 and "holds other code than the patch expects" in line
    assert "--- patch" not in out and "add --diff to print them" in out
    code, out = run(*args, "--diff")
    assert code == 1 and "--- patch" in out and f"+{UPSTREAM.rstrip()}" in out


def test_a_conflict_list_naming_a_file_outside_the_tree_is_refused(
    patchset: Path, upstream: Path, tmp_path: Path
) -> None:
    ps = tmp_path / "ps"
    shutil.copytree(patchset, ps)
    run("apply", "--target", str(upstream), "--patchset", str(ps), "--conflicts=markers")
    state = upstream / ".patchctl" / "conflicts.json"
    doc = json.loads(state.read_text(encoding="utf-8"))
    doc["conflicts"][0]["path"] = "../outside.py"
    state.write_text(json.dumps(doc), encoding="utf-8")
    code, out = run("refresh", "--target", str(upstream), "--patchset", str(ps))
    assert code == 2 and "the list of conflicts is damaged" in out and "climbs out of the tree" in out
    assert not (ps / "resolutions.toml").exists()


def test_a_symlinked_resolutions_file_is_refused(patchset: Path, tmp_path: Path) -> None:
    ps = tmp_path / "ps"
    shutil.copytree(patchset, ps)
    elsewhere = tmp_path / "elsewhere.toml"
    elsewhere.write_text("", encoding="utf-8")
    (ps / "resolutions.toml").symlink_to(elsewhere)
    code, out = run("list", "--patchset", str(ps))
    assert code == 2 and "is a symbolic link" in out


def test_a_header_conflict_is_marked_resolved_and_replayed(release_tree, tmp_path: Path) -> None:
    from patchctl import releases

    head = "    def log(self, data, step):\n        data = {"
    fork = tmp_path / "fork"
    shutil.copytree(releases.materialize("0.6.1"), fork, symlinks=True)
    replace(fork, head, "    def log(self, data, step, flush=False):  # Uky\n        data = {")
    run("capture", "--from", str(fork), "--base", "verl==0.6.1", "--out", str(tmp_path / "ps"))
    trees = [release_tree(v) for v in ("0.6.1", "0.6.0")]
    for tree in trees:
        replace(tree, head, "    def log(self, data, step, extra=None):\n        data = {")
    tree, again = trees
    code, out = run("apply", "--target", str(tree), "--patchset", str(tmp_path / "ps"), "--conflicts=markers")
    assert code == 1 and "conflict-marked" in out, out
    marked = (tree / TRACKING).read_text(encoding="utf-8")
    start, end = marked.index("<<<<<<< upstream"), marked.index("\n", marked.index(">>>>>>>")) + 1
    resolved = "    def log(self, data, step, extra=None, flush=False):  # Uky\n"
    (tree / TRACKING).write_text(marked[:start] + resolved + marked[end:], encoding="utf-8")
    assert run("refresh", "--target", str(tree), "--patchset", str(tmp_path / "ps"))[0] == 0
    assert run("verify", "--target", str(tree), "--patchset", str(tmp_path / "ps"))[0] == 0
    code, out = run("apply", "--target", str(again), "--patchset", str(tmp_path / "ps"))
    assert code == 0 and resolved in (again / TRACKING).read_text(encoding="utf-8"), out


def test_two_conflicts_are_cut_apart_only_where_that_is_unambiguous() -> None:
    from patchctl.errors import ConflictUnresolved
    from patchctl.patchsets.conflicts import Marked, digest
    from patchctl.patchsets.refresh import _cut

    def mark(pid: str, gap: list[str], after: list[str]) -> Marked:
        return Marked("ps", pid, "f.py", "", "", len(gap), digest(gap), len(after), digest(after))

    marks = [mark("one", ["a\n"], ["\n"]), mark("two", ["\n"], ["z\n"])]
    assert _cut(["a\n", "x\n", "\n", "y\n", "z\n"], marks) == [["x\n"], ["y\n"]]
    with pytest.raises(ConflictUnresolved, match="cannot be cut apart: a resolution holds the lines"):
        _cut(["a\n", "x\n", "\n", "x2\n", "\n", "y\n", "z\n"], marks)
