"""The remote layer's processes die with patchctl and not before (issue 24.5, 18.4).

validate starts each Ray node's ssh session on a pool thread that ends long before the session
should; with the parent-death signal tied to the forking thread, that would kill the session.
A real process opens the cluster's masters and such a session as validate does, prints, and is
SIGKILLed: nothing of it may keep running, here or on the host, and the next run sweeps its
control folder (/tmp/pcm-*) and stage folder (/tmp/pcv-stage-*).
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from test_migrate_kill import _host_sessions, _marked, _settled

from patchctl import orphans
from patchctl.clusters import load_cluster
from patchctl.remote import lock_agent, ssh

if TYPE_CHECKING:
    from conftest import Site

CODE = """
import pathlib, sys, time
from concurrent.futures import ThreadPoolExecutor
from patchctl import orphans, proc
from patchctl.clusters import load_cluster
from patchctl.remote import ssh
cluster = load_cluster("loop", pathlib.Path(sys.argv[1]))
conns = ssh.Connections(cluster)
stage = orphans.owned_dir("pcv-stage-")
assert conns.masters[0].open() is None
with ThreadPoolExecutor(1) as pool:  # as rayup starts each node's session
    argv = ssh.ssh_argv(cluster, cluster.hosts[0], ["sleep", "60"], conns.masters[0].socket)
    session = pool.submit(proc.spawn, argv).result()
time.sleep(1.0)
print(conns.dir, stage, session.poll(), flush=True)
time.sleep(60)
"""


def test_sessions_outlive_their_thread_die_with_patchctl_and_leave_no_folder(site: Site, tmp_path: Path) -> None:
    config = site.config("", ["node1"])
    mark = uuid.uuid4().hex
    child = subprocess.Popen(
        [sys.executable, "-c", CODE, str(config)],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PATCHCTL_TEST_MARK": mark},
    )
    assert child.stdout is not None
    control, stage, poll = child.stdout.readline().split()
    assert poll == "None"  # the session still runs after the pool thread that started it ended
    assert len(_marked(mark)) >= 3 and _host_sessions(site)  # patchctl, its master, its session
    os.kill(child.pid, signal.SIGKILL)
    child.wait()
    assert _settled(lambda: _marked(mark)) == []
    assert _settled(lambda: _host_sessions(site)) == []
    assert Path(control).is_dir() and Path(stage).is_dir()

    with ssh.Connections(load_cluster("loop", config)), orphans.scratch("pcv-stage-"):  # the next run
        assert not Path(control).exists() and not Path(stage).exists()


def test_the_lock_keeper_makes_nothing_through_a_symlinked_patchctl(tmp_path: Path) -> None:
    """A host root whose .patchctl leads elsewhere: neither lock is made there (issue 18.1's rule
    for the host side), and the hold is refused with the cause."""
    root, elsewhere = tmp_path / "root", tmp_path / "elsewhere"
    root.mkdir()
    elsewhere.mkdir()
    os.symlink(elsewhere, root / ".patchctl")
    hold = subprocess.run(
        [sys.executable, lock_agent.__file__, "hold"],
        input=f"{root}\x001\x00test\x00",  # root, wait, holder: NUL-ended
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert hold.stdout == f"error\t{root}/.patchctl leads out of the root; make it a folder there\n"
    transfer = subprocess.run(
        [sys.executable, lock_agent.__file__, "transfer", str(root / lock_agent.TRANSFER), "1", "true"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert transfer.returncode == 5 and "leads out of the root" in transfer.stderr
    assert list(elsewhere.iterdir()) == []


def test_the_transfer_wrapper_that_cannot_take_the_lock_names_its_holder_and_runs_nothing(tmp_path: Path) -> None:
    """The host's rsync is started through ``transfer``: when another transfer still holds the
    root's transfer lock past the wait, it exits 5 naming that holder, and what it was to become
    never runs."""
    lock = tmp_path / "root" / lock_agent.TRANSFER
    lock.parent.mkdir(parents=True)
    wrapper = [sys.executable, lock_agent.__file__, "transfer", str(lock)]
    holder = subprocess.Popen([*wrapper, "1", "sleep", "60"])
    try:
        deadline = time.monotonic() + 10
        while not (lock.exists() and lock.read_text().startswith("rsync pid")) and time.monotonic() < deadline:
            time.sleep(0.05)
        ran = tmp_path / "ran"
        second = subprocess.run([*wrapper, "0.2", "touch", str(ran)], capture_output=True, text=True, timeout=30)
        assert second.returncode == 5 and not ran.exists(), second.stderr
        assert second.stderr == f"patchctl: {lock} is held by another transfer (rsync pid {holder.pid})\n"
    finally:
        holder.kill()
        holder.wait()


def _hold_once(root: Path, holder: str = "test") -> str:
    """The keeper's answer for ``root``, let go at once."""
    done = subprocess.run(
        [sys.executable, lock_agent.__file__, "hold"],
        input=f"{root}\x000\x00{holder}\x00",
        capture_output=True,
        text=True,
        timeout=30,  # a keeper that never ends is killed with the test
    )
    return done.stdout


def test_the_lock_keeper_says_empty_only_for_a_root_without_a_tree(tmp_path: Path) -> None:
    """``empty`` lets a first transfer skip --delay-updates (migrate.transfer): said for a missing
    root, an empty one and one holding only patchctl's folder (a migrate stopped before it
    sent), never for a root holding anything else, a hidden file or an empty folder included."""
    assert _hold_once(tmp_path / "new" / "root") == "locked\tempty\n"  # made by the keeper
    assert _hold_once(tmp_path / "new" / "root") == "locked\tempty\n"  # now holds .patchctl only
    for name in ("verl", ".env", ".rsync-partial"):
        root = tmp_path / name.strip(".")
        (root / name).mkdir(parents=True)
        assert _hold_once(root) == "locked\n", name


def test_the_lock_keeper_never_says_empty_for_a_root_another_user_owns(tmp_path: Path) -> None:
    """A root an admin made for a group: rsync could not set its time (migrate.transfer)."""
    if os.geteuid() != 0:
        pytest.skip("giving a folder to another user needs root")
    root = tmp_path / "shared"
    root.mkdir()
    os.chown(root, 65534, 65534)
    assert _hold_once(root) == "locked\n"
    os.chown(root, 0, 0)
    assert _hold_once(root) == "locked\tempty\n"


def test_the_lock_keeper_never_says_empty_for_a_root_it_cannot_list() -> None:
    """A root its owner may write but not read (mode 0300): what it holds is unknown, so it is
    not called empty. Run as another user, since root reads every folder."""
    if os.geteuid() != 0:
        pytest.skip("running the keeper as another user needs root")
    python = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else os.path.realpath(sys.executable)
    with tempfile.TemporaryDirectory() as base_s:
        os.chmod(base_s, 0o755)  # the other user reaches the root through it
        root = Path(base_s) / "root"
        (root / "verl").mkdir(parents=True)
        os.chown(root, 65534, 65534)
        argv = [python, "-I", "-S", "-c", Path(lock_agent.__file__).read_text(), "hold"]

        def hold() -> str:
            done = subprocess.run(
                argv, input=f"{root}\x000\x00test\x00", capture_output=True, text=True, user=65534, timeout=30
            )
            assert done.returncode == 0, done.stderr
            return done.stdout

        os.chmod(root, 0o700)
        assert hold() == "locked\n"  # readable: it holds verl
        shutil.rmtree(root / "verl")
        assert hold() == "locked\tempty\n"  # readable and empty
        os.chmod(root, 0o300)
        assert hold() == "locked\n"  # unreadable: not known to be empty


def test_the_lock_keeper_reads_any_root_and_answers_one_line(tmp_path: Path) -> None:
    """Its request is NUL-ended fields, not a line: a root with a newline and a tab in its name is
    locked, a second keeper is told who holds it on one line, and a keeper that gets end-of-file
    before a request makes nothing."""
    root = tmp_path / "a\nb\tc"
    root.mkdir()
    idle = subprocess.run([sys.executable, lock_agent.__file__, "hold"], input="", capture_output=True, timeout=30)
    assert idle.returncode == 0 and idle.stdout == b"" and not (root / ".patchctl").exists()
    assert _hold_once(root, "an earlier run, described at length " * 4) == "locked\tempty\n"
    first = subprocess.Popen(
        [sys.executable, lock_agent.__file__, "hold"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    assert first.stdin is not None and first.stdout is not None
    try:
        first.stdin.write(f"{root}\x005\x00")  # a request that arrives in two parts
        first.stdin.flush()
        time.sleep(0.3)
        first.stdin.write("run one\non two lines\x00")
        first.stdin.flush()
        assert first.stdout.readline() == "locked\tempty\n"  # nothing but its own .patchctl there
        second = subprocess.run(
            [sys.executable, lock_agent.__file__, "hold"],
            input=f"{root}\x000\x00run two\x00",
            capture_output=True,
            text=True,
            timeout=30,
        )
        assert second.stdout == "busy\trun one on two lines\n"  # nothing left of the earlier, longer text
        for lock in (lock_agent.SESSION, lock_agent.TRANSFER):
            assert (root / lock).stat().st_mode & 0o777 == 0o600  # a holder's command line is for its user only
    finally:
        first.stdin.close()
        first.wait(timeout=10)


def test_a_master_is_ended_through_its_socket_without_an_ssh_process(
    site: Site, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``ssh -O exit``'s two messages, spoken by patchctl: the master ends, and no ssh client
    starts for it (issue 39: one such process per host ended every migrate)."""
    log, bin_dir = tmp_path / "ssh-runs", tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "ssh").write_text(f'#!/bin/sh\necho "$*" >> "{log}"\nexec {shutil.which("ssh")} "$@"\n')
    (bin_dir / "ssh").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    cluster = site.cluster("", ["node1"])
    folder = Path(tempfile.mkdtemp(dir="/tmp", prefix="pcm-test-"))  # a unix socket path is short
    try:
        master = ssh.Master(cluster, cluster.hosts[0], folder, 0)
        assert master.open() is None
        assert master._proc is not None
        master.close()
        assert master._proc.poll() is not None  # ended
        assert [" -M " in run for run in log.read_text().splitlines()] == [True]  # the login, nothing after
        # spoken to a socket nobody listens on: False, for the caller to fall back to ssh -O exit
        assert not ssh.mux_terminate(master.socket)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
