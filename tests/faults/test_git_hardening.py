"""A repository handed in runs nothing (issue 41): every way its own git config names a program.

Each test plants one vector in a real repository, as a script that leaves a marker file, then
runs every patchctl command that reads or writes a repository: capture (FORK, a ref BASE, a
directory BASE), drift, bisect, watch, retire, matrix, verify, apply, revert (a conflict, which
asks ``git diff``) and ``apply --commit``. No marker may appear, and no command may fail with an
internal error.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from tests.drift.helpers import NEW, OLD, SERVER, invoke, patchset

from patchctl import git, proc
from patchctl.drift import history

HOOKS = (
    "pre-commit",
    "prepare-commit-msg",
    "commit-msg",
    "post-commit",
    "post-checkout",
    "reference-transaction",
    "post-index-change",
    "pre-auto-gc",
)
#: the commits of every hostile repository: (files, message, tag)
HISTORY: list[tuple[dict[str, str], str, str | None]] = [
    ({"verl/__init__.py": "", "verl/version/version": "0.1.0\n", SERVER: OLD}, "initial", "v0.1.0"),
    ({"docs/a.md": "a\n"}, "docs", None),
    ({SERVER: NEW, "verl/version/version": "0.2.0\n"}, "absorb", "v0.2.0"),
    ({SERVER: OLD, "verl/version/version": "0.2.1\n", "verl/ours.py": "X = 1  # Uky\n"}, "back", None),
]


def sh(*args: str, cwd: Path | None = None) -> str:
    """git as the fixtures run it: before any vector is planted (after, it would trip them itself)."""
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t"}
    env["GIT_COMMITTER_EMAIL"] = "t@t"
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True, env=env).stdout


def build(root: Path, attributes: str = "") -> Path:
    """A verl-like repository with :data:`HISTORY` (and a committed .gitattributes when given)."""
    sh("init", "-q", "-b", "main", str(root))
    for i, (files, message, tag) in enumerate(HISTORY):
        for rel, text in {**files, **({".gitattributes": attributes} if attributes and i == 0 else {})}.items():
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            (root / rel).write_text(text)
        sh("-C", str(root), "add", "-A")
        sh("-C", str(root), "commit", "-qm", message)
        if tag:
            sh("-C", str(root), "tag", tag)
    return root


class Plant:
    """Scripts that leave a marker in ``marks`` when anything runs them."""

    def __init__(self, tmp: Path) -> None:
        self.bin, self.marks = tmp / "bin", tmp / "marks"
        self.bin.mkdir()
        self.marks.mkdir()

    def script(self, name: str, then: str = "exit 0") -> str:
        path = self.bin / name
        path.write_text(f'#!/bin/sh\ntouch "{self.marks}/{name}"\n{then}\n')
        path.chmod(0o755)
        return str(path)

    def hooks(self, folder: Path) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        for hook in HOOKS:
            (folder / hook).write_text(f'#!/bin/sh\ntouch "{self.marks}/{folder.name}-{hook}"\n')
            (folder / hook).chmod(0o755)

    def filters(self, repo: Path) -> None:
        sh("-C", str(repo), "config", "filter.evil.clean", self.script("clean", "cat"))
        sh("-C", str(repo), "config", "filter.evil.smudge", self.script("smudge", "cat"))

    def fired(self) -> list[str]:
        return sorted(p.name for p in self.marks.iterdir())


def _fsmonitor(repo: Path, plant: Plant) -> None:
    sh("-C", str(repo), "config", "core.fsmonitor", plant.script("fsmonitor", "exit 1"))


def _hooks(repo: Path, plant: Plant) -> None:
    plant.hooks(repo / ".git" / "hooks")


def _hooks_path(repo: Path, plant: Plant) -> None:
    plant.hooks(plant.bin / "elsewhere")
    sh("-C", str(repo), "config", "core.hooksPath", str(plant.bin / "elsewhere"))


def _diff_external(repo: Path, plant: Plant) -> None:
    sh("-C", str(repo), "config", "diff.external", plant.script("external"))


def _textconv(repo: Path, plant: Plant) -> None:
    sh("-C", str(repo), "config", "diff.evil.textconv", plant.script("textconv", 'cat "$1"'))


def _diff_command(repo: Path, plant: Plant) -> None:
    sh("-C", str(repo), "config", "diff.evil.command", plant.script("diff-command"))


def _filter_in_gitattributes(repo: Path, plant: Plant) -> None:
    plant.filters(repo)


def _filter_in_info_attributes(repo: Path, plant: Plant) -> None:
    (repo / ".git" / "info").mkdir(exist_ok=True)
    (repo / ".git" / "info" / "attributes").write_text("* filter=evil\n")
    plant.filters(repo)


def _filter_in_an_included_file(repo: Path, plant: Plant) -> None:
    extra = plant.bin / "extra.gitconfig"
    extra.write_text(
        f'[filter "evil"]\n\tclean = {plant.script("clean", "cat")}\n\tsmudge = {plant.script("smudge", "cat")}\n'
    )
    sh("-C", str(repo), "config", "include.path", str(extra))


def _filter_process(repo: Path, plant: Plant) -> None:
    sh("-C", str(repo), "config", "filter.evil.process", plant.script("process", "exit 1"))
    sh("-C", str(repo), "config", "filter.evil.required", "true")  # switched off, it must not fail every read


#: vector -> (what .gitattributes says, or "" for none; how the config is planted)
VECTORS: dict[str, tuple[str, Callable[[Path, Plant], None]]] = {
    "core.fsmonitor": ("", _fsmonitor),
    ".git/hooks": ("", _hooks),
    "core.hooksPath": ("", _hooks_path),
    "diff.external": ("", _diff_external),
    "diff.X.textconv": ("* diff=evil\n", _textconv),
    "diff.X.command": ("* diff=evil\n", _diff_command),
    "filter via .gitattributes": ("* filter=evil\n", _filter_in_gitattributes),
    "filter via .git/info/attributes": ("", _filter_in_info_attributes),
    "filter via include.path": ("* filter=evil\n", _filter_in_an_included_file),
    "filter.X.process": ("* filter=evil\n", _filter_process),
}


def _touch_all(repo: Path) -> None:
    """Every tracked file a second newer than the index says: git must read them again (and so
    run a clean filter) to tell whether they changed."""
    for path in repo.rglob("*"):
        if ".git" not in path.relative_to(repo).parts and path.is_file():
            st = path.stat()
            os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 2_000_000_000))


def every_command(repo: Path, tmp: Path, plant: Plant) -> None:
    """Each command that runs git on ``repo``; after each, no marker and no internal error."""
    ps = patchset(tmp / "ps")
    clean_fork = tmp / "fork"
    (clean_fork / "verl").mkdir(parents=True)
    (clean_fork / "verl" / "__init__.py").write_text("")

    def step(*args: str, codes: tuple[int, ...] = (0, 1)) -> None:
        done = invoke(*args)
        assert done.exit_code in codes, (args, done.output)
        assert plant.fired() == [], f"`patchctl {' '.join(args[:1])}` ran the repository's {plant.fired()}"

    r, p = str(repo), str(ps)
    step("capture", "--from", r, "--base", "v0.1.0", "--dry-run")
    step("capture", "--from", r, "--base", r, "--dry-run")
    step("capture", "--from", str(clean_fork), "--base", r, "--dry-run")
    step("drift", "--from", "v0.1.0", "--to", "v0.2.0", "--repo", r, "--patchset", p)
    step("bisect", "log-requests", "--good", "v0.1.0", "--bad", "v0.2.0", "--repo", r, "--patchset", p)
    step("watch", "--repo", r, "--since", "v0.1.0", "--patchset", p)
    step("retire", "--target", "v0.2.0", "--repo", r, "--since", "v0.1.0", "--patchset", p)
    step("matrix", "--repo", r, "--versions", "v0.1.0,v0.2.0", "--patchset", p)
    step("verify", "--target", r, "--patchset", p)
    step("apply", "--target", r, "--patchset", p, codes=(0,))
    applied = (repo / SERVER).read_bytes()
    (repo / SERVER).write_bytes(b"def start(config, engine_args):\n    return None\n")
    step("revert", "--target", r, "--patchset", p, codes=(1,))  # the call is gone: the conflict shows `git diff HEAD`
    (repo / SERVER).write_bytes(applied)
    step("revert", "--target", r, "--patchset", p, codes=(0,))
    step("apply", "--target", r, "--patchset", p, "--commit", codes=(0,))


@pytest.mark.parametrize("vector", list(VECTORS))
def test_no_command_runs_what_the_repository_config_names(tmp_path: Path, vector: str) -> None:
    attributes, plant_it = VECTORS[vector]
    repo = build(tmp_path / "repo", attributes)
    plant = Plant(tmp_path)
    plant_it(repo, plant)
    _touch_all(repo)
    every_command(repo, tmp_path, plant)
    log = sh("-C", str(repo), "log", "--format=%s", "-1", "patchctl/t")
    assert log.startswith("patchctl"), log  # the commit was made, with no hook


def test_a_partial_clone_fetches_nothing_through_the_repository_ssh_command(tmp_path: Path) -> None:
    """``core.sshCommand`` (allowed by the repository's own ``protocol.ssh.allow``) runs when a
    partial clone fetches a blob it lacks: none is fetched, the blob is said to be missing."""
    upstream = build(tmp_path / "upstream")
    sh("-C", str(upstream), "config", "uploadpack.allowFilter", "true")
    repo = tmp_path / "repo"
    sh("clone", "-q", "--filter=blob:none", f"file://{upstream}", str(repo))
    plant = Plant(tmp_path)
    sh("-C", str(repo), "config", "remote.origin.url", "ssh://upstream.invalid/verl.git")
    sh("-C", str(repo), "config", "core.sshCommand", plant.script("ssh"))
    sh("-C", str(repo), "config", "protocol.ssh.allow", "always")
    sha = git.commit_of(repo, "v0.2.0")
    assert sha is not None
    assert history.read(repo, sha, SERVER) is None  # NEW's blob is not there, and is not fetched
    assert plant.fired() == []
    done = invoke("matrix", "--repo", str(repo), "--versions", "v0.2.0", "--patchset", str(patchset(tmp_path / "ps")))
    assert done.exit_code == 2 and plant.fired() == []
    assert f"{SERVER} at commit {sha[:12]} is not in the repository (a partial clone" in done.output
    bisect = ("bisect", "log-requests", "--good", "v0.1.0", "--bad", "v0.2.0", "--repo", str(repo))
    done = invoke(*bisect, "--patchset", str(tmp_path / "ps"))
    assert done.exit_code != 3 and plant.fired() == []


def test_a_git_command_not_built_by_the_git_module_is_refused() -> None:
    """The one hardening point cannot be forgotten: proc refuses a git argv that skipped it."""
    with pytest.raises(proc.UnguardedGit):
        proc.run(["git", "--version"])
    with pytest.raises(proc.UnguardedGit):
        proc.spawn(["/usr/bin/git", "-C", ".", "status"])
    assert proc.run(git.command(Path("."), "--version")).returncode == 0


def test_the_users_own_config_is_trusted_and_the_repositorys_switched_off(tmp_path: Path, monkeypatch) -> None:
    """A driver in ~/.gitconfig (git-lfs, say) keeps working; the repository's own is switched
    off, and one it redefines gets the user's program back."""
    repo = build(tmp_path / "repo")
    home = tmp_path / "home.gitconfig"
    home.write_text('[filter "lfs"]\n\tclean = git-lfs clean -- %f\n[filter "mine"]\n\tsmudge = mine-smudge\n')
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(home))
    sh("-C", str(repo), "config", "filter.lfs.clean", "git-lfs clean -- %f")  # `git lfs install --local`
    sh("-C", str(repo), "config", "filter.mine.smudge", "evil")
    sh("-C", str(repo), "config", "filter.theirs.process", "evil")
    argv = git.command(repo, "status")
    overrides = [argv[i + 1] for i, a in enumerate(argv[:-1]) if a == "-c"]
    assert "filter.mine.smudge=mine-smudge" in overrides and "filter.theirs.process=" in overrides
    assert not any(o.startswith("filter.lfs.") for o in overrides)


def test_a_driver_whose_name_cannot_be_switched_off_is_refused(tmp_path: Path) -> None:
    repo = build(tmp_path / "repo")
    sh("-C", str(repo), "config", "filter.a=b.smudge", "evil")
    done = invoke(
        "drift", "--from", "v0.1.0", "--to", "v0.2.0", "--repo", str(repo), "--patchset", str(patchset(tmp_path / "ps"))
    )
    assert done.exit_code == 2
    assert done.output.strip().splitlines() == [
        f"error: {repo}: its git config sets 'filter.a=b.smudge', a program patchctl cannot switch off (the "
        "driver's name holds '='); remove or rename it in the repository's .git/config"
    ]
