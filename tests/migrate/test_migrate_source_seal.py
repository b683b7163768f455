"""The source's seal (migrate/seal.py): an unchanged tree hands the hosts its summary from one
stat per file, and any change the hash cache would see (size and mtime kept, a rename, a commit,
a younger file, a damaged seal) makes the tree prepared in full again."""

from __future__ import annotations

import hashlib
import json
import os
import socket
import time
from pathlib import Path

import pytest
from migrate_helpers import git, make_repo
from test_migrate_fileset import cluster
from test_migrate_hashcache import same_size_same_mtime

from patchctl import __version__
from patchctl.clusters import Cluster, Host
from patchctl.migrate import Options, fileset, hashcache, seal, state, verify_remote
from patchctl.migrate.listing import Listing
from patchctl.migrate.prepare import Pending, Prepared, prepare

FILES = {f"pkg/m{i}.py": f"value = {i:04d}  # Uky\n" for i in range(4)}


@pytest.fixture
def tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr(state, "state_dir", lambda: tmp_path / "state")
    root = make_repo(tmp_path / "src", {"a.py": "x = 1\n"}, untracked=FILES)
    time.sleep(0.05)  # older than the first walk's clock: the seal may be kept
    return root


def run(
    root: Path, tmp: Path, options: Options | None = None, to: Cluster | None = None
) -> tuple[Prepared | None, seal.Summary]:
    """One preparation whose hosts all settle by their own seals (nothing asks for the tree)."""
    pending = Pending(to or cluster(), root, options or Options())
    tree = prepare(root, (), (), tmp, pending, needed=lambda: False)
    return tree, pending.summary.result()


def test_an_unchanged_tree_hands_on_the_summary_it_was_prepared_with_and_reads_nothing(
    tree: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first, summary = run(tree, tmp_path)
    assert first is not None and first.summary == summary
    loads: list[Path] = []
    monkeypatch.setattr(hashcache, "load", lambda root, *a: loads.append(root))  # must not be reached
    again, same = run(tree, tmp_path)
    assert (again, same, loads) == (None, summary, [])


@pytest.mark.parametrize(
    "change",
    [
        pytest.param(lambda r: same_size_same_mtime(r / "pkg/m1.py", "value = 9999  # Uky\n"), id="size-mtime-kept"),
        pytest.param(lambda r: os.replace(_twin(r / "pkg/m2.py"), r / "pkg/m2.py"), id="replaced-by-rename"),
        pytest.param(lambda r: (r / "pkg/m9.py").write_text("new = 1\n"), id="new-file"),
        pytest.param(lambda r: (r / "pkg/m3.py").unlink(), id="file-removed"),
        pytest.param(lambda r: (git(r, "add", "-A"), git(r, "commit", "-qm", "x")), id="committed"),
        pytest.param(lambda r: (r / "pkg/m0.py").chmod(0o755), id="made-executable"),
    ],
)
def test_any_change_prepares_the_tree_again_with_its_new_summary(
    tree: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, change: object
) -> None:
    _, summary = run(tree, tmp_path)
    change(tree)  # type: ignore[operator]
    again, now = run(tree, tmp_path)
    assert again is not None, "a changed tree passed for the sealed one"
    assert now != summary and now.request != summary.request


def _twin(path: Path) -> Path:
    """A file of the same content, size and mtime as ``path``, made beside it (to be renamed over it)."""
    twin = path.with_name(path.name + ".new")
    twin.write_bytes(path.read_bytes().replace(b"0002", b"2222"))
    st = path.stat()
    os.utime(twin, ns=(st.st_atime_ns, st.st_mtime_ns))
    return twin


@pytest.mark.parametrize("old_mtime", [False, True], ids=["written", "mtime-put-back"])
def test_a_tree_younger_than_its_walk_is_not_sealed(
    tree: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, old_mtime: bool
) -> None:
    """A file written in the walk's own clock tick may change again unseen: no seal is kept. The
    tick is made coarse here (the clock reads the file's own ctime), as on a file system that
    keeps times in jiffies; ``old_mtime``: its mtime put back, only its ctime is young."""
    young = tree / "pkg/m1.py"
    if old_mtime:
        same_size_same_mtime(young, "value = 1111  # Uky\n")
    else:
        young.write_text("value = 1111  # Uky\n")
    real_clock = hashcache.clock
    monkeypatch.setattr(hashcache, "clock", lambda: young.stat().st_ctime_ns)
    run(tree, tmp_path)
    assert seal.load(tree, cluster().name) is None
    monkeypatch.setattr(hashcache, "clock", real_clock)
    run(tree, tmp_path)
    assert seal.load(tree, cluster().name) is not None


@pytest.mark.parametrize(
    "damage",
    [
        lambda doc: "not json",
        lambda doc: json.dumps(dict(doc, format=seal.FORMAT + 1)),
        lambda doc: json.dumps(dict(doc, summary=dict(doc["summary"], request=5))),
        lambda doc: json.dumps(dict(doc, summary=dict(doc["summary"], files="many"))),
        lambda doc: json.dumps({k: v for k, v in doc.items() if k != "summary"}),
    ],
    ids=["not-json", "other-format", "request-not-a-digest", "count-not-a-number", "no-summary"],
)
def test_a_damaged_seal_prepares_the_tree_in_full(tree: Path, tmp_path: Path, damage: object) -> None:
    """The seal still matches the tree; what it vouches for is damaged: never handed on."""
    run(tree, tmp_path)
    kept = seal._file(tree, cluster().name)
    kept.write_text(damage(json.loads(kept.read_text())))  # type: ignore[operator]
    again, summary = run(tree, tmp_path)
    assert again is not None and again.summary == summary


def test_a_tree_sent_to_two_clusters_in_turn_stays_sealed_for_each(tree: Path, tmp_path: Path) -> None:
    other = Cluster("other", (Host("h", "/r"),), "/r", Path("/cfg/patchctl.toml"))
    _, summary = run(tree, tmp_path)
    _, elsewhere = run(tree, tmp_path, to=other)
    assert elsewhere.request != summary.request  # the provenance names the cluster
    assert run(tree, tmp_path) == (None, summary)
    assert run(tree, tmp_path, to=other) == (None, elsewhere)


def test_checksum_never_trusts_the_seal(tree: Path, tmp_path: Path) -> None:
    run(tree, tmp_path)
    again, _ = run(tree, tmp_path, Options(checksum=True))
    assert again is not None


def test_a_host_that_needs_the_tree_gets_it_prepared_after_the_seal(tree: Path, tmp_path: Path) -> None:
    first, summary = run(tree, tmp_path)
    pending = Pending(cluster(), tree, Options())
    asked: list[seal.Summary] = []
    again = prepare(
        tree, (), (), tmp_path, pending, needed=lambda: bool(asked.append(pending.summary.result())) or True
    )
    assert asked == [summary]  # the summary came from the seal, before the tree was prepared
    assert again is not None and first is not None
    assert again.manifest == first.manifest and pending.ready.result() is again


def _seal_of_format_1(root: Path) -> str:
    """The seal FORMAT 1 gave ``root``'s walk: its context, then one text row of stat fields per file."""
    walked = fileset.walk(root, cluster(), ())
    c = cluster()
    head = fileset.changes(Listing(root))
    context = [1, __version__, socket.gethostname(), str(root), c.name, [], [], verify_remote.tag_rule(set()), [], head]
    h = hashlib.sha256(json.dumps(context, separators=(",", ":")).encode())
    for path, st in walked.stat_rows():
        h.update(f"{path}\0{st.st_mode}\0{st.st_size}\0{st.st_mtime_ns}\0{st.st_ctime_ns}\0{st.st_ino}\0\n".encode())
    return h.hexdigest()


def test_a_seal_of_the_old_format_is_none_and_the_tree_is_prepared_in_full(tree: Path, tmp_path: Path) -> None:
    """A seal an older patchctl kept of this very tree (FORMAT 1, stats as text) reads as none:
    never as a match, nor as a mismatch taken for a change; the tree is prepared and sealed anew."""
    _, summary = run(tree, tmp_path)
    kept = seal._file(tree, cluster().name)
    kept.write_text(json.dumps(dict(json.loads(kept.read_text()), format=1, seal=_seal_of_format_1(tree))))
    assert seal.load(tree, cluster().name) is None
    again, same = run(tree, tmp_path)
    assert again is not None and same == summary
    assert json.loads(kept.read_text())["format"] == seal.FORMAT == 2
    assert run(tree, tmp_path) == (None, summary)


def test_a_renamed_folder_git_does_not_see_is_a_change(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A folder git ignores, sent as the cluster includes it, renamed: its files keep every stat
    field (a rename touches the folder, not them) and git lists no change; only their paths differ."""
    monkeypatch.setattr(state, "state_dir", lambda: tmp_path / "state")
    root = make_repo(tmp_path / "src", {".gitignore": "data/\n", "a.py": ""}, untracked={"data/x/w.bin": "w"})
    time.sleep(0.05)  # older than the first walk's clock: the seal may be kept
    data = cluster(include=("data",))
    _, summary = run(root, tmp_path, to=data)
    assert run(root, tmp_path, to=data) == (None, summary)
    os.rename(root / "data/x", root / "data/y")
    again, now = run(root, tmp_path, to=data)
    assert again is not None and now != summary


def test_a_tree_with_no_commit_yet_is_sealed_too(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(state, "state_dir", lambda: tmp_path / "state")
    root = tmp_path / "src"
    root.mkdir()
    git(root, "init", "-q")
    (root / "a.py").write_text("x = 1\n")
    time.sleep(0.05)
    _, summary = run(root, tmp_path)
    assert summary.commit is None
    assert run(root, tmp_path) == (None, summary)
