"""A release target through real ``python -m patchctl`` processes: hostile archives, slow servers,
two first uses at once, and a ``kill -9`` mid-download (issue 41)."""

from __future__ import annotations

import os
import re
import resource
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from tests.releases.release_index import SRC, Index, member, patchctl, patchctl_process, release

from patchctl import releases


def cache_listing() -> dict[str, list[str]]:
    """What the cache holds, folder by folder (hidden names included: a leftover is often one)."""
    root = releases.cache_dir()
    return {d.name: sorted(p.name for p in d.iterdir()) for d in sorted(root.iterdir()) if d.is_dir()}


def test_an_archive_git_folder_never_runs_during_verify(index: Index, tmp_path: Path) -> None:
    """The archive's .git/config sets core.fsmonitor and its pre-commit hook is executable: before
    the fix both ran during this read-only verify (git reinitialised the archive's repository)."""
    marker = tmp_path / "ran"
    hostile = release(
        "9.0.1",
        member("verl-9.0.1/.git/config", f"[core]\n\tfsmonitor = touch {marker}-fsmonitor\n".encode()),
        member("verl-9.0.1/.git/hooks/pre-commit", f"#!/bin/sh\ntouch {marker}-hook\n".encode(), mode=0o755),
        member("verl-9.0.1/.git/HEAD", b"ref: refs/heads/main\n"),
    )
    index.publish("verl-9.0.1.tar.gz", hostile)
    ran = patchctl("verify", "--target", "verl==9.0.1")
    assert ran.code == 1 and "verify: FAILED" in ran.out, ran.text  # it ran: the patches are missing
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cache"]
    tree = releases.cache_dir() / "trees" / "verl-9.0.1"
    assert "fsmonitor" not in (tree / ".git" / "config").read_text()
    assert not (tree / ".git" / "hooks" / "pre-commit").exists()
    log = subprocess.run(["git", "-C", str(tree), "log", "--format=%s"], capture_output=True, text=True).stdout
    assert log == "verl 9.0.1 (source release verl-9.0.1.tar.gz)\n"


def test_an_unsafe_member_is_one_line_exit_2_and_leaves_the_cache(index: Index, tmp_path: Path) -> None:
    """Deep enough to leave the cache from the unpacking folder (trees/.unpack-*/.unpack-*/verl-X)."""
    hostile = release("9.0.2", member("verl-9.0.2/../../../../../evil.py", b"import os\n"))
    index.publish("verl-9.0.2.tar.gz", hostile)
    ran = patchctl("apply", "--target", "verl==9.0.2")
    archive = releases.cache_dir() / "releases" / "verl-9.0.2.tar.gz"
    assert ran.code == 2 and ran.out == "", ran.text
    assert ran.err == (
        f"error: verl==9.0.2: {archive}: member 'verl-9.0.2/../../../../../evil.py' climbs out of the folder with ..; "
        "the archive was removed from the cache and nothing was unpacked: report the archive to the index's owner, "
        "or point PATCHCTL_INDEX_URL at another index\n"
    )
    assert cache_listing() == {"releases": [], "trees": []}
    assert not (tmp_path / "evil.py").exists()


def test_a_server_sending_a_byte_every_2_s_meets_the_deadline(index: Index, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATCHCTL_DOWNLOAD_TIMEOUT", "3")
    index.publish("verl-9.0.3.tar.gz", release("9.0.3")).dribble = 2.0
    ran = patchctl("verify", "--target", "verl==9.0.3", timeout=60)
    assert ran.code == 2, ran.text
    assert f"could not download from {index.url}/files/verl-9.0.3.tar.gz (not done within 3 s" in ran.err
    assert re.search(r"PATCHCTL_DOWNLOAD_TIMEOUT\); \d bytes came\)", ran.err), ran.err  # 1 byte per 2 s
    assert cache_listing() == {"releases": []}


def test_a_server_dribbling_its_headers_meets_the_deadline(index: Index, monkeypatch: pytest.MonkeyPatch) -> None:
    """No body byte ever comes, so only the watchdog, not a check between reads, can stop it."""
    monkeypatch.setenv("PATCHCTL_DOWNLOAD_TIMEOUT", "3")
    index.publish("verl-9.0.4.tar.gz", release("9.0.4"))
    index.routes["/simple/verl/"].dribble, index.routes["/simple/verl/"].dribble_headers = 2.0, True
    ran = patchctl("verify", "--target", "verl==9.0.4", timeout=60)
    assert ran.code == 2, ran.text
    assert f"could not download from {index.url}/simple/verl/ (not done within 3 s" in ran.err


def test_two_first_uses_at_once_both_succeed(index: Index) -> None:
    """The index holds both downloads until both asked, so both unpack and race to put the tree in place."""
    route = index.publish("verl-9.0.5.tar.gz", release("9.0.5"))
    route.barrier = threading.Barrier(2)
    procs = [patchctl_process("verify", "--target", "verl==9.0.5") for _ in range(2)]
    done = [p.communicate(timeout=120) for p in procs]
    assert [p.returncode for p in procs] == [1, 1], done
    assert all("verify: FAILED" in out for out, _ in done)  # both ran verify on the one tree
    assert index.requests_for("verl-9.0.5.tar.gz") == 2
    assert cache_listing() == {
        "releases": ["verl-9.0.5.tar.gz", "verl-9.0.5.tar.gz.sha256"],
        "trees": ["verl-9.0.5"],
    }


def test_a_kill_9_mid_download_leaves_nothing_the_next_run_does_not_sweep(index: Index) -> None:
    data = release("9.0.6", member("verl-9.0.6/blob", os.urandom(300_000)))
    route = index.publish("verl-9.0.6.tar.gz", data)
    route.stall_after = len(data) // 2
    proc = patchctl_process("verify", "--target", "verl==9.0.6")
    store = releases.cache_dir() / "releases"
    deadline = time.monotonic() + 60
    while not any(p.stat().st_size for p in store.glob(".part-*/*.part")):
        assert time.monotonic() < deadline and proc.poll() is None, "the download never started"
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert [p.name for p in store.iterdir() if p.name.startswith(".part-")], "the kill left no partial download"
    route.stall_after = None
    ran = patchctl("verify", "--target", "verl==9.0.6")
    assert ran.code == 1, ran.text
    assert cache_listing() == {
        "releases": ["verl-9.0.6.tar.gz", "verl-9.0.6.tar.gz.sha256"],
        "trees": ["verl-9.0.6"],
    }


def test_a_kill_9_mid_unpack_is_swept_too(index: Index) -> None:
    """A tree half made (kill -9 while unpacking or committing) is the same kind of leftover."""
    index.publish("verl-9.0.7.tar.gz", release("9.0.7"))
    releases.sdist("9.0.7")
    leftover = releases.cache_dir() / "trees" / ".unpack-abc123" / "verl-9.0.7"
    leftover.mkdir(parents=True)
    (leftover / "half.py").write_text("")
    ran = patchctl("verify", "--target", "verl==9.0.7")
    assert ran.code == 1, ran.text
    assert cache_listing()["trees"] == ["verl-9.0.7"]


def wait_for_part(proc: subprocess.Popen[str], version: str) -> None:
    """Until the run has written some of its archive into its .part-* folder."""
    store = releases.cache_dir() / "releases"
    deadline = time.monotonic() + 60
    while not any(p.stat().st_size for p in store.glob(f".part-*/verl-{version}.tar.gz.part")):
        assert time.monotonic() < deadline and proc.poll() is None, f"the download of {version} never started"
        time.sleep(0.05)


def test_a_run_never_sweeps_what_a_live_run_is_writing(index: Index) -> None:
    """A stalls mid-download; B starts and stalls too; A finishes; C runs from start to end while B
    still writes. Only a run alone sweeps, so B's and A's partial downloads survive the others."""
    routes = {}
    for v in ("9.2.5", "9.2.6", "9.2.7"):
        data = release(v, member(f"verl-{v}/blob", os.urandom(200_000)))
        routes[v] = index.publish(f"verl-{v}.tar.gz", data)
        routes[v].stall_after = len(data) // 2
    a = patchctl_process("verify", "--target", "verl==9.2.5")
    wait_for_part(a, "9.2.5")
    b = patchctl_process("verify", "--target", "verl==9.2.6")
    wait_for_part(b, "9.2.6")
    routes["9.2.5"].go.set()
    assert a.wait(timeout=120) == 1, a.communicate()
    routes["9.2.7"].stall_after = None
    c = patchctl("verify", "--target", "verl==9.2.7")
    assert c.code == 1, c.text
    routes["9.2.6"].go.set()
    assert b.wait(timeout=120) == 1, b.communicate()
    assert cache_listing()["trees"] == ["verl-9.2.5", "verl-9.2.6", "verl-9.2.7"]


def test_a_disk_that_refuses_the_download_is_not_called_a_network_error(index: Index) -> None:
    """The download is written as it comes: a file-size limit (as a full disk) stops it, named as the
    machine's error, with nothing left behind."""
    index.publish("verl-9.2.8.tar.gz", release("9.2.8", member("verl-9.2.8/blob", os.urandom(2 << 20))))

    def small_files() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (1 << 20, 1 << 20))

    done = subprocess.run(
        [sys.executable, "-m", "patchctl", "verify", "--target", "verl==9.2.8"],
        env={**os.environ, "PYTHONPATH": str(SRC)},
        capture_output=True,
        text=True,
        preexec_fn=small_files,
        timeout=120,
    )
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith("error: ") and "file-size limit of 1.0 MiB (ulimit -f)" in done.stderr, done.stderr
    assert "could not download" not in done.stderr
    assert cache_listing() == {"releases": []}


def test_a_host_that_never_accepts_the_connection_meets_the_deadline(
    index: Index, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A listening socket whose queue is full: the kernel drops further SYNs, so connect() waits.
    The socket is watched only once connected; until then its timeout is the time left."""
    with socket.socket() as full:
        full.bind(("127.0.0.1", 0))
        full.listen(0)
        port = full.getsockname()[1]
        fillers = []
        for _ in range(4):  # fill the accept queue (never accepted); a 4th connect would wait
            s = socket.socket()
            s.setblocking(False)
            s.connect_ex(full.getsockname())
            fillers.append(s)
        monkeypatch.setenv("PATCHCTL_INDEX_URL", f"http://127.0.0.1:{port}/simple")
        monkeypatch.setenv("PATCHCTL_DOWNLOAD_TIMEOUT", "2")
        ran = patchctl("verify", "--target", "verl==9.2.9", timeout=30)
        for s in fillers:
            s.close()
    assert ran.code == 2, ran.text
    assert f"could not download from http://127.0.0.1:{port}/simple/verl/ (" in ran.err
