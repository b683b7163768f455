"""The source side's shortcuts of issue 23 (session 4) keep every guarantee: git asked early
answers as git asked late, and only about the tree it was asked about; the one pass over the
paths drops exactly what the separate steps dropped; the manifest rows stay the host's format;
a no-change re-run writes no cache, and a change that kept size and mtime is still seen."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from migrate_fixtures import Site
from migrate_helpers import make_repo
from test_migrate_fileset import cluster
from test_migrate_hashcache import same_size_same_mtime

from patchctl.cli.main import cli
from patchctl.migrate import Options, agent_cache, fileset, hashcache, listing, provenance, state, verify_remote
from patchctl.migrate.fileset import collect
from patchctl.migrate.listing import Listing
from patchctl.migrate.prepare import Pending, prepare
from patchctl.patchsets import loader


def test_git_asked_early_answers_as_git_asked_late(gitignore_repo: Path) -> None:
    """Anchoring, negation, nested .gitignore files, tracked files matching a rule: all git's, so
    the same whenever it is asked; and the changes and HEAD that provenance records too."""
    (gitignore_repo / "forced.log").write_text("changed since the commit\n")
    early = Listing(gitignore_repo)
    time.sleep(0.05)  # the answers are in before collect asks for them
    late, asked = collect(gitignore_repo, cluster()), collect(gitignore_repo, cluster(), asked=early)
    assert asked == late and "forced.log" in asked.changed and asked.commit


def test_answers_about_another_tree_are_not_used(tmp_path: Path) -> None:
    one = make_repo(tmp_path / "one", {"a.py": "a\n"})
    other = make_repo(tmp_path / "other", {"b.py": "b\n"})
    assert collect(other, cluster(), asked=Listing(one)).paths == ["b.py"]


def test_a_migrate_asks_git_once_as_soon_as_the_tree_is_known(
    site: Site, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The CLI asks (session.look_at) before the patchsets load; the file set uses those answers
    rather than asking again."""
    tree = make_repo(tmp_path / "src", {"verl/__init__.py": "a = 1\n", "b/c.py": ""})
    events: list[object] = []
    real_init, real_load = Listing.__init__, loader.load_patchsets

    def counting(self: Listing, root: Path) -> None:
        events.append(root)
        real_init(self, root)

    def loading(*args: Any) -> Any:
        events.append("patchsets")
        return real_load(*args)

    monkeypatch.setattr(listing.Listing, "__init__", counting)
    monkeypatch.setattr(loader, "load_patchsets", loading)
    config = site.config(aliases=["node1"])
    done = CliRunner().invoke(cli, ["migrate", "loop", "--target", str(tree), "--config", str(config), "--dry-run"])
    assert done.exit_code == 0, done.output
    assert events == [tree.resolve(), "patchsets"]


def test_the_one_pass_drops_exactly_what_the_steps_dropped(tmp_path: Path) -> None:
    """Folders named like .git or an output directory are not those; a file named like an output
    directory is sent; a tracked file inside one stops the run only where it is one."""
    sent = {
        ".github/workflows/ci.yml": "on: push\n",
        ".gitignore": "",
        "src/logs.py": "x = 1\n",
        "x/logsy/z.py": "",
        "pkg/outputs": "a file, not a folder\n",
    }
    kept_home = {"a/logs/b.py": "", "wandb/run/x": "", "checkpoints/s1/w.bin": ""}
    root = make_repo(tmp_path / "r", sent, untracked=kept_home)
    assert collect(root, cluster()).paths == sorted(sent)


def test_manifest_rows_are_path_kind_digest_executable(tmp_path: Path) -> None:
    """What the host's agent reads: one ``[path, kind, digest, executable]`` per file, the named
    tuple's first four fields, sliced in C."""
    root = make_repo(tmp_path / "r", {"run.sh": "#!/bin/sh\n", "data.txt": "abc\n"})
    os.chmod(root / "run.sh", 0o755)
    os.symlink("data.txt", root / "link")
    fs = collect(root, cluster())
    rows = json.loads(provenance.encode_manifest(fs))
    assert rows == [[e.path, e.kind, e.digest, e.executable] for e in fs.entries]
    assert [r[:2] + r[3:] for r in rows] == [["data.txt", "f", False], ["link", "l", False], ["run.sh", "f", True]]


def _pass(root: Path) -> dict[str, str]:
    """One source pass as prepare makes it: the cache loaded, the file set, the tag inventory, saved."""
    rule = verify_remote.tag_rule({"Uky"})
    cache = hashcache.load(root, rule, True)
    fs = fileset.collect(root, cluster(), (), cache)
    verify_remote.tags_request(fs, rule, (), cache)
    hashcache.save(root, cache)
    return {e.path: e.digest for e in fs.entries}


def _identity(path: Path) -> Any:
    st = path.stat()
    return st.st_ino, st.st_mtime_ns, st.st_size


def test_a_no_change_pass_writes_no_cache_and_a_kept_size_and_mtime_change_is_seen(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(state, "state_dir", lambda: tmp_path / "state")
    root = make_repo(tmp_path / "src", {f"pkg/m{i}.py": f"value = {i:04d}\n" for i in range(4)})
    time.sleep(0.05)  # older than the pass: remembered
    first = _pass(root)
    written = _identity(hashcache.cache_file(root))
    assert _pass(root) == first and _identity(hashcache.cache_file(root)) == written  # nothing new: not written
    same_size_same_mtime(root / "pkg/m2.py", "value = 7777\n")
    time.sleep(0.05)
    changed = _pass(root)
    assert changed["pkg/m2.py"] != first["pkg/m2.py"] and changed.keys() == first.keys()
    remembered = json.loads(hashcache.cache_file(root).read_text())["files"]
    assert remembered["pkg/m2.py"][4] == changed["pkg/m2.py"]  # the new digest, saved for the next pass
    (root / "pkg/m3.py").unlink()
    _pass(root)
    assert "pkg/m3.py" not in json.loads(hashcache.cache_file(root).read_text())["files"]  # a file gone


def test_changes_since_the_commit_are_listed_once_each_in_order(tmp_path: Path) -> None:
    """What provenance records: modified, deleted and untracked paths, sorted, and a file git
    stopped tracking but left on disk (a staged deletion and an untracked file at once) once."""
    root = make_repo(tmp_path / "r", {"a.py": "", "b.py": "", "c.py": "", "d.py": ""}, untracked={"0new.py": ""})
    (root / "a.py").write_text("changed\n")
    (root / "b.py").unlink()
    subprocess.run(["git", "-C", str(root), "rm", "-q", "--cached", "c.py"], check=True)
    assert collect(root, cluster()).changed == ("0new.py", "a.py", "b.py", "c.py")


def test_the_hosts_get_the_tree_before_the_cache_is_written_and_it_is_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(state, "state_dir", lambda: tmp_path / "state")
    root = make_repo(tmp_path / "src", {"a.py": "x = 1  # Uky\n", "b.py": "y = 2\n"})
    time.sleep(0.05)  # older than the pass: remembered
    events: list[object] = []
    real_save = hashcache.save

    def save(*args: Any) -> None:
        events.append("cache written")
        real_save(*args)

    monkeypatch.setattr(hashcache, "save", save)
    pending = Pending(cluster(), root, Options())
    pending.ready.add_done_callback(lambda tree: events.append(tree.result().fs.paths))
    prepare(root, (), (), tmp_path, pending)
    assert events == [["a.py", "b.py"], "cache written"]
    assert set(json.loads(hashcache.cache_file(root).read_text())["files"]) == {"a.py", "b.py"}


def test_a_source_file_is_read_once_for_its_digest_and_its_tagged_lines(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A first pass reads each small file once: the tag inventory takes the lines scanned from the
    bytes that were hashed, and they are the lines a separate scan finds (a tagged line, a file
    without the tag, a binary file carrying the word)."""
    monkeypatch.setattr(state, "state_dir", lambda: tmp_path / "state")
    files = {"a.py": "x = 1  # Uky\ny = 2\n", "b.py": "z = 3\n", "c.bin": "Uky # Uky\0\n"}
    root = make_repo(tmp_path / "src", files)
    rule = verify_remote.tag_rule({"Uky"})
    separate = verify_remote.tags_request(fileset.collect(root, cluster()), rule, ())["expected"]
    assert separate == [["a.py", 1, "x = 1  # Uky"]]
    opened: list[str] = []
    real = agent_cache.contents

    def counting(full: str) -> bytes:
        opened.append(os.path.relpath(full, root))
        return real(full)

    monkeypatch.setattr(agent_cache, "contents", counting)
    cache = hashcache.load(root, rule, True)  # cold: nothing remembered yet
    fs = fileset.collect(root, cluster(), (), cache)
    assert verify_remote.tags_request(fs, rule, (), cache)["expected"] == separate
    assert sorted(opened) == fs.paths and set(files) <= set(opened)  # each file once, none twice
