"""The file set: git decides what belongs to the tree, including where rsync's filters would not."""

from __future__ import annotations

import hashlib
import os
import subprocess
from pathlib import Path

import pytest
from migrate_helpers import EXPECTED, make_repo

from patchctl.clusters import Cluster, Host
from patchctl.migrate import fileset
from patchctl.migrate.errors import NotAGitTree, TrackedFileLeftOut
from patchctl.migrate.fileset import collect
from patchctl.patchsets import record as rec


def cluster(**kw: object) -> Cluster:
    return Cluster("c", (Host("h", "/r"),), "/r", Path("/cfg/patchctl.toml"), **kw)


def test_git_decides_membership(gitignore_repo: Path) -> None:
    fs = collect(gitignore_repo, cluster())
    assert set(fs.paths) == EXPECTED


@pytest.mark.usefixtures("rsync_installed")
def test_rsync_filter_rules_would_disagree(gitignore_repo: Path, tmp_path: Path) -> None:
    """What `rsync --exclude-from=.gitignore` (plus the nested file as a merge rule) would send:
    the reason migrate asks git instead."""
    done = subprocess.run(
        [
            "rsync",
            "-an",
            "--out-format=%n",
            "--exclude=.git/",
            "--filter=:- .gitignore",
            f"{gitignore_repo}/",
            str(tmp_path / "dst"),
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    by_rsync = {ln for ln in done.stdout.splitlines() if ln and not ln.endswith("/")}
    ours = set(collect(gitignore_repo, cluster()).paths)
    assert "x/doc/frotz" in ours and "x/doc/frotz" not in by_rsync  # anchoring
    assert "forced.log" in ours and "forced.log" not in by_rsync  # tracked files always belong
    assert "private.txt" not in ours and "private.txt" in by_rsync  # .git/info/exclude


def test_manifest_holds_sha256_mode_and_links(tmp_path: Path) -> None:
    root = make_repo(tmp_path / "r", {"run.sh": "#!/bin/sh\n", "data.txt": "abc\n"})
    os.chmod(root / "run.sh", 0o755)
    os.symlink("data.txt", root / "link")
    fs = collect(root, cluster())
    by_path = {e.path: e for e in fs.entries}
    assert by_path["data.txt"].digest == hashlib.sha256(b"abc\n").hexdigest()
    assert by_path["run.sh"].executable and not by_path["data.txt"].executable
    assert (by_path["link"].kind, by_path["link"].digest) == ("l", "data.txt")


def test_large_and_small_files_hash_alike(tmp_path: Path) -> None:
    """Small files are hashed inline, large ones (>= fileset.BIG) on worker threads."""
    big = os.urandom(fileset.BIG) + b"tail"
    root = make_repo(tmp_path / "r", {"small.py": "x = 1\n"})
    for name in ("big1.bin", "big2.bin"):
        (root / name).write_bytes(big + name.encode())
    fs = collect(root, cluster())
    assert {e.path: e.digest for e in fs.entries} == {
        "small.py": hashlib.sha256(b"x = 1\n").hexdigest(),
        **{n: hashlib.sha256(big + n.encode()).hexdigest() for n in ("big1.bin", "big2.bin")},
    }


def test_tracked_file_in_an_output_dir_fails_naming_it(tmp_path: Path) -> None:
    root = make_repo(tmp_path / "r", {"a.py": "", "checkpoints/step_1/model.pt": "weights"})
    with pytest.raises(TrackedFileLeftOut) as err:
        collect(root, cluster())
    msg = str(err.value)
    assert "checkpoints/step_1/model.pt" in msg and "clusters.c.include" in msg and "/cfg/patchctl.toml" in msg
    fs = collect(root, cluster(include=("checkpoints/step_1",)))
    assert "checkpoints/step_1/model.pt" in fs.paths


def test_tracked_file_excluded_by_the_cluster_fails(tmp_path: Path) -> None:
    root = make_repo(tmp_path / "r", {"a.py": "", "scratch/notes.md": ""})
    with pytest.raises(TrackedFileLeftOut, match=r"scratch/notes.md \(matches clusters.c.exclude 'scratch'\)"):
        collect(root, cluster(exclude=("scratch",)))


def test_outputs_stay_home_unless_included(tmp_path: Path) -> None:
    root = make_repo(
        tmp_path / "r",
        {".gitignore": "*.pt\n", "a.py": ""},
        untracked={
            "outputs/run1/metrics.json": "{}",
            "logs/train.txt": "loss",
            "checkpoints/keep/final.pt": "w",
            "checkpoints/old/x.pt": "w",
            "wandb/run/f": "",
        },
    )
    assert collect(root, cluster()).paths == [".gitignore", "a.py"]
    fs = collect(root, cluster(include=("checkpoints/keep", "logs")))
    # included paths travel even where git ignores them (*.pt)
    assert fs.paths == [".gitignore", "a.py", "checkpoints/keep/final.pt", "logs/train.txt"]


def test_patchset_added_files_travel_even_if_git_ignores_them(tmp_path: Path) -> None:
    root = make_repo(tmp_path / "r", {".gitignore": "tools/\n", "a.py": ""}, untracked={"tools/helper.py": "x = 1\n"})
    entry = rec.Entry("uky", "helper", "add-file", "tools/helper.py", None, "0" * 64, "2025-01-01T00:00:00+00:00")
    (root / ".patchctl").mkdir()
    (root / rec.RECORD_PATH).write_bytes(rec.Record("0.6.1", None, {}, [entry]).to_bytes())
    assert {"tools/helper.py", rec.RECORD_PATH} <= set(collect(root, cluster()).paths)


def test_host_files_and_generated_files_stay_home(tmp_path: Path) -> None:
    root = make_repo(
        tmp_path / "r",
        {"a.py": ""},
        untracked={
            "git_ignore.py": "DATA_DIR = '/mine'\n",
            ".patchctl/env.sh": "",
            ".patchctl/provenance.json": "{}",
            ".patchctl/seal.json": "{}",  # a host's seal, copied back: sent, it would be every host's
        },
    )
    assert collect(root, cluster(), generated=("git_ignore.py",)).paths == ["a.py"]


def test_an_interrupted_writes_temp_files_and_journal_never_travel(tmp_path: Path) -> None:
    """What a patchctl write killed half-way leaves (#10): the next command on the tree mends
    it; a host must never get it, whatever git, the record or the cluster's include say."""
    debris = {
        "verl/.trainer.py.0badc0de.patchctl-tmp": "half\n",
        "README.md.patchctl-tmp": "half\n",
        ".patchctl-journal/journal.json": "{}",
        ".patchctl-journal/backup/verl/trainer.py": "old\n",
        ".patchctl/journal/journal.json": "{}",
        ".patchctl/journal-1234/step": "",
    }
    root = make_repo(tmp_path / "r", {"verl/trainer.py": "x = 1\n", "README.md": "r\n"}, untracked=debris)
    everything = ("verl", ".patchctl-journal", ".patchctl", "README.md.patchctl-tmp")
    for c in (cluster(), cluster(include=everything)):
        assert collect(root, c).paths == ["README.md", "verl/trainer.py"]
    entry = rec.Entry(
        "uky", "x", "add-file", "verl/.trainer.py.0badc0de.patchctl-tmp", None, "0" * 64, "2025-01-01T00:00:00+00:00"
    )
    (root / rec.RECORD_PATH).write_bytes(rec.Record("0.6.1", None, {}, [entry]).to_bytes())
    assert collect(root, cluster()).paths == [rec.RECORD_PATH, "README.md", "verl/trainer.py"]


def test_a_tracked_file_deleted_on_disk_is_a_deletion_not_an_error(tmp_path: Path) -> None:
    root = make_repo(tmp_path / "r", {"a.py": "", "b.py": ""})
    (root / "b.py").unlink()
    fs = collect(root, cluster())
    assert fs.paths == ["a.py"] and fs.changed == ("b.py",)


def test_not_a_git_tree(tmp_path: Path) -> None:
    (tmp_path / "plain").mkdir()
    with pytest.raises(NotAGitTree, match="git init"):
        collect(tmp_path / "plain", cluster())
