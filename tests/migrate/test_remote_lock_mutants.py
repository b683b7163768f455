"""A migrate's hold on a host root (remote/lock.py), over real ssh to the loopback hosts.

Issue 41's second audit planted one-line bugs in the root lock that the migrate tests let pass:
the bound on how long a migrate waits for the host's lock keeper, the hold kept after close, the
answers for a host whose python is missing or whose keeper fails. Each test asks for the root as
a migrate does (``RootLock(...).wait()``) and asserts what a user would read or notice: the
reason a host failed, whether a second migrate gets the root, whether the root counted as empty.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from migrate_fixtures import Site

from patchctl.remote import lock_agent
from patchctl.remote.lock import RootLock, transfer_path


def fake_python(path: Path, body: str) -> str:
    """A stand-in for the hosts' python3: a shell script (the host is this machine)."""
    path.write_text("#!/bin/sh\n" + body + "\n")
    path.chmod(0o755)
    return f'python = "{path}"\n'


def open_files() -> set[tuple[str, str]]:
    """This process's descriptors, each with what it is open on (a file's inode shows in its name:
    one closed while a new one is opened under the same number reads differently)."""
    out = set()
    for fd in os.listdir("/proc/self/fd"):
        with contextlib.suppress(OSError):  # the listing's own descriptor, closed by now
            out.add((fd, os.readlink(f"/proc/self/fd/{fd}")))
    return out


def test_the_root_is_held_until_close_and_a_waiting_migrate_gets_it_then(
    site: Site, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first migrate holds the root (and names itself in the lock file) until it closes; a
    second one asking meanwhile, with 5 s to wait, gets the root as soon as the first lets go."""
    cluster = site.cluster(aliases=["node1"])
    (host,) = cluster.hosts
    monkeypatch.setenv("PATCHCTL_LOCK_WAIT", "5")
    first = RootLock(cluster, host, None)
    assert first.wait() is None
    assert first.wait() is None  # asked once: the same answer again
    assert first.empty  # the root holds nothing but .patchctl: a first transfer has no tree to keep whole
    holder = (site.root("node1") / lock_agent.SESSION).read_text()
    assert holder.startswith(f"pid {os.getpid()}, ") and holder.endswith(f" on {socket.gethostname()}")
    second = RootLock(cluster, host, None)
    answers: list[str | None] = []
    asking = threading.Thread(target=lambda: answers.append(second.wait()))
    asking.start()
    try:
        first.close()
        asking.join(timeout=60)
        assert answers == [None]
    finally:
        second.close()


def test_the_end_of_the_with_block_lets_go_and_leaves_no_descriptor_open(
    site: Site, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One lock per host lives for the whole run: once its ``with`` block ends, the next migrate
    gets the root without waiting, and the lock keeps none of this process's descriptors."""
    cluster = site.cluster(aliases=["node1"])
    monkeypatch.setenv("PATCHCTL_LOCK_WAIT", "0")
    before = open_files()
    with RootLock(cluster, cluster.hosts[0], None) as first:
        assert first.wait() is None
    assert open_files() <= before  # ``first`` is still referenced here: its files are closed, not collected
    with RootLock(cluster, cluster.hosts[0], None) as second:
        assert second.wait() is None


def test_a_transfer_still_holding_the_roots_transfer_lock_keeps_the_root(
    site: Site, monkeypatch: pytest.MonkeyPatch
) -> None:
    """rsync runs under the keeper's ``transfer`` wrapper on transfer_path's file: a migrate that
    asks for the root while such a transfer runs is refused, naming it (with or without a slash
    at the end of the configured root)."""
    cluster = site.cluster(aliases=["node1"])
    (host,) = cluster.hosts
    lock = site.root("node1") / lock_agent.TRANSFER
    assert transfer_path(host) == transfer_path(dataclasses.replace(host, root=host.root + "/")) == str(lock)
    lock.parent.mkdir(parents=True)
    argv = [sys.executable, lock_agent.__file__, "transfer", transfer_path(host), "1", "sleep", "30"]
    straggler = subprocess.Popen(argv)
    monkeypatch.setenv("PATCHCTL_LOCK_WAIT", "1")
    try:
        while not (lock.exists() and lock.read_text().startswith("rsync pid")):
            assert straggler.poll() is None
            time.sleep(0.02)
        with RootLock(cluster, host, None) as held:
            assert held.wait() == (
                f"{host.root} is being migrated by another patchctl (a transfer of an earlier migrate still "
                f"running there (rsync pid {straggler.pid})); waited 1 s: run migrate again once it has ended"
            )
    finally:
        straggler.kill()
        straggler.wait()


def test_a_root_holding_a_tree_is_not_empty(site: Site) -> None:
    cluster = site.cluster(aliases=["node1"])
    (site.root("node1") / "verl").mkdir(parents=True)
    with RootLock(cluster, cluster.hosts[0], None) as lock:
        assert lock.wait() is None
        assert not lock.empty


def test_a_busy_root_names_its_holder_and_the_wait(site: Site, monkeypatch: pytest.MonkeyPatch) -> None:
    cluster = site.cluster(aliases=["node1"])
    root = site.root("node1")
    keeper = subprocess.Popen(
        [sys.executable, lock_agent.__file__, "hold"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    assert keeper.stdin is not None and keeper.stdout is not None
    keeper.stdin.write(f"{root}\x005\x00the other run\x00")
    keeper.stdin.flush()
    assert keeper.stdout.readline() == "locked\tempty\n"
    monkeypatch.setenv("PATCHCTL_LOCK_WAIT", "1")
    try:
        with RootLock(cluster, cluster.hosts[0], None) as lock:
            assert lock.wait() == (
                f"{root} is being migrated by another patchctl (the other run); "
                "waited 1 s: run migrate again once it has ended"
            )
    finally:
        keeper.stdin.close()
        keeper.wait(timeout=10)


def test_a_root_the_keeper_cannot_lock_says_why(site: Site) -> None:
    cluster = site.cluster(aliases=["node1"])
    root = site.root("node1")
    root.mkdir(parents=True)
    (root / ".patchctl").symlink_to(site.dir)
    with RootLock(cluster, cluster.hosts[0], None) as lock:
        assert lock.wait() == (
            f"could not lock {root} on the host: {root}/.patchctl leads out of the root; make it a folder there"
        )


def test_an_unreachable_host_is_said_to_be_so(site: Site) -> None:
    cluster = site.cluster(aliases=[site.loop.down_alias])
    with RootLock(cluster, cluster.hosts[0], None) as lock:
        why = lock.wait()
    assert why is not None and why.startswith("ssh could not connect (") and "Connection refused" in why


def test_a_host_without_the_python_names_the_setting(site: Site) -> None:
    cluster = site.cluster('python = "/nonexistent/python3"\n', aliases=["node1"])
    with RootLock(cluster, cluster.hosts[0], None) as lock:
        assert lock.wait() == (
            "/nonexistent/python3 is not installed there (migrate needs python3 >= 3.6; set clusters.loop.python)"
        )


@pytest.mark.parametrize(("stderr", "shown"), [("echo 'boom: disk full' >&2", "boom: disk full"), ("", "no output")])
def test_a_keeper_that_fails_shows_its_exit_code_and_last_line(site: Site, stderr: str, shown: str) -> None:
    extra = fake_python(site.dir / "python3", f"{stderr}\nexit 3")
    cluster = site.cluster(extra, aliases=["node1"])
    with RootLock(cluster, cluster.hosts[0], None) as lock:
        assert lock.wait() == f"could not lock {site.root('node1')} on the host (exit 3: {shown})"


def test_without_ssh_the_lock_says_so(site: Site, monkeypatch: pytest.MonkeyPatch) -> None:
    cluster = site.cluster(aliases=["node1"])
    monkeypatch.setenv("PATH", str(site.dir / "no-tools"))
    with RootLock(cluster, cluster.hosts[0], None) as lock:
        why = lock.wait()
    assert why is not None and why.startswith("ssh: not found on PATH; install it")


def test_a_keeper_that_never_answers_is_given_up_after_the_bound(site: Site, monkeypatch: pytest.MonkeyPatch) -> None:
    """No answer: a migrate waits its PATCHCTL_LOCK_WAIT, plus ssh's connect time (the cluster's
    timeout, at most 20 s), plus 10 s, then fails the host; closing ends the silent session.
    Takes ~40 s (the 30 s bound, then close's 10 s grace before it kills the session)."""
    pidfile = site.dir / "keeper.pid"
    extra = fake_python(site.dir / "python3", f"echo $$ > {pidfile}\nexec sleep 300") + "timeout = 60\n"
    cluster = site.cluster(extra, aliases=["node1"])
    monkeypatch.setenv("PATCHCTL_LOCK_WAIT", "0")
    try:
        with RootLock(cluster, cluster.hosts[0], None) as lock:
            assert lock.wait() == "the host's lock keeper did not answer within 30 s"
    finally:
        if pidfile.exists():
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(pidfile.read_text()), signal.SIGKILL)
