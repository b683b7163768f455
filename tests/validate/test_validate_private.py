"""The run's Ray state on a host (host/statedir.py, host/procs.py): a private folder, and a sweep that removes
only what is provably this user's and provably dead. No Ray needed: plain folders and processes."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from patchctl.validate.host import procs, statedir

NOBODY = 65534


def test_the_private_folder_is_made_0700_and_a_widened_one_is_narrowed(root: Path) -> None:
    assert statedir.private_root() == str(root) and root.stat().st_mode & 0o777 == 0o700
    root.chmod(0o777)
    statedir.private_root()
    assert root.stat().st_mode & 0o777 == 0o700


def test_a_planted_link_or_another_users_folder_is_refused(root: Path, tmp_path: Path) -> None:
    (tmp_path / "theirs").mkdir()
    root.symlink_to(tmp_path / "theirs")
    with pytest.raises(statedir.PrivateStateRefused, match="is not a folder of ours"):
        statedir.private_root()
    root.unlink()
    root.mkdir()
    os.chown(root, NOBODY, NOBODY)
    with pytest.raises(statedir.PrivateStateRefused, match=f"belongs to uid {NOBODY}, not to this user"):
        statedir.private_root()


def test_a_session_dir_leaves_room_for_rays_socket_paths(
    root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = statedir.make_session_dir("0123456789ab.1")
    assert len(path) + statedir.RAY_SOCKET_TAIL < statedir.SUN_PATH
    assert Path(path).parent == root and Path(path).name.startswith("0123456789ab-1-")
    monkeypatch.setattr(statedir, "state_root", lambda: str(tmp_path / ("x" * 40)))
    with pytest.raises(statedir.PrivateStateRefused, match="is too long for Ray's socket paths"):
        statedir.make_session_dir("0123456789ab.1")


def test_the_sweep_removes_only_this_users_dead_runs(root: Path) -> None:
    statedir.private_root()
    dead = Path(statedir.make_session_dir("deadbeef0001.0"))
    theirs = Path(statedir.make_session_dir("deadbeef0002.0"))
    os.chown(theirs, NOBODY, NOBODY)
    live = Path(statedir.make_session_dir("deadbeef0003.0"))
    env = {**os.environ, procs.MARKER: "deadbeef0003.0"}
    holder = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], env=env)
    try:
        old = time.time() - 3600
        for d in (dead, theirs, live):
            os.utime(d, (old, old))
        assert procs.sweep_stale() == [str(dead)]
        assert theirs.is_dir() and live.is_dir()
    finally:
        holder.kill()
        holder.wait()
    assert procs.sweep_stale() == [str(live)]


def test_the_sweep_leaves_a_root_that_is_not_this_users(root: Path) -> None:
    statedir.private_root()
    d = Path(statedir.make_session_dir("deadbeef0004.0"))
    os.utime(d, (0, 0))
    os.chown(root, NOBODY, NOBODY)
    assert procs.sweep_stale() == [] and d.is_dir()


def test_an_environment_that_cannot_be_read_is_not_taken_for_dead(monkeypatch: pytest.MonkeyPatch) -> None:
    real_open = open

    def unreadable(path: object, *args: object, **kw: object) -> object:
        if str(path) == f"/proc/{holder.pid}/environ":
            raise PermissionError(13, "Permission denied")
        return real_open(path, *args, **kw)

    holder = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        monkeypatch.setattr("builtins.open", unreadable)
        assert holder.pid not in procs.marked("deadbeef0005.0")
        assert holder.pid in procs.marked("deadbeef0005.0", unknown=time.time() - 60)
        # a process older than the node's temp dir cannot be one of the node's
        assert holder.pid not in procs.marked("deadbeef0005.0", unknown=time.time() + 60)
    finally:
        monkeypatch.undo()
        holder.kill()
        holder.wait()
