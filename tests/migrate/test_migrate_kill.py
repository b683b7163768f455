"""kill -9 of migrate leaves nothing running and nothing in /tmp that the next run keeps, and
two migrates never write one host root at once (issue 18.3, 18.4; issue 24.5).

Real processes: ``python -m patchctl migrate`` to real sshd hosts on loopback with a slow
rsync (``bwlimit``), killed with SIGKILL mid-transfer. Every local process of the run carries
an environment marker, so a leftover is found by scanning /proc; the hosts' side is every
process below their sshd.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import TYPE_CHECKING

from click.testing import CliRunner
from migrate_helpers import make_repo
from sshd_harness import _descendants

from patchctl import orphans
from patchctl.cli.main import cli
from patchctl.remote import lock_agent, ssh

if TYPE_CHECKING:
    from conftest import Site

SLOW = "bwlimit = 1024\n"  # KiB/s: 3 MiB take about 3 s


def _marked(mark: str) -> list[str]:
    """``pid command`` of every process that carries the run's marker in its environment."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            environ = Path(f"/proc/{entry}/environ").read_bytes()
            cmd = Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if f"PATCHCTL_TEST_MARK={mark}".encode() in environ.split(b"\0"):
            found.append(f"{entry} {cmd[:120]}")
    return found


def _owned_by(stamps: set[str]) -> list[Path]:
    """The scratch folders in /tmp whose owner file names one of these processes: only what this
    test's own migrate made, never the folders of other runs on the same machine (made and swept
    at any moment)."""
    found = []
    for path in sorted(orphans.BASE.iterdir()):
        try:
            if (path / orphans.OWNER).read_text(encoding="ascii").strip() in stamps:
                found.append(path)
        except OSError:  # not a folder, no owner file, or another user's
            continue
    return found


def _host_sessions(site: Site) -> list[int]:
    """Every process the hosts' sshd started (sessions, rsync servers, agents, lock keepers)."""
    return [pid for h in site.loop.hosts if h.proc is not None for pid in _descendants(h.proc.pid)]


def _settled(check: object, limit: float = 15.0) -> object:
    deadline = time.monotonic() + limit
    while True:
        left = check()
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.1)


def _migrate(tree: Path, config: Path, tmp_path: Path, *more: str, **env: str) -> subprocess.Popen[str]:
    argv = [sys.executable, "-m", "patchctl", "migrate", "loop", "--target", str(tree), "--config", str(config), *more]
    return subprocess.Popen(
        argv,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PATCHCTL_CACHE": str(tmp_path / "cache"), **env},
    )


def _arriving(site: Site, alias: str, name: str = "big.bin") -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not any(name in p.name for p in site.root(alias).rglob("*")):
        time.sleep(0.05)
    time.sleep(0.5)


def test_kill_9_leaves_no_process_no_folder_and_no_late_rename(site: Site, tmp_path: Path) -> None:
    tree = make_repo(tmp_path / "src", {"verl/__init__.py": ""})
    old, new = os.urandom(3 << 20), os.urandom(3 << 20)
    (tree / "big.bin").write_bytes(old)
    config = site.config(SLOW, ["node1", "node2"])
    mark = uuid.uuid4().hex
    child = _migrate(tree, config, tmp_path, PATCHCTL_TEST_MARK=mark)
    _arriving(site, "node1")
    running = _marked(mark)
    assert any(" rsync " in p for p in running) and sum(" ssh " in p for p in running) >= 3, running
    stamps = {orphans.stamp(int(p.split()[0])) for p in running}  # taken while they run: pid and start time
    left = _owned_by(stamps)
    assert any(p.name.startswith(ssh.PREFIX) for p in left), left  # its control folder (and its groups' list)
    os.kill(child.pid, signal.SIGKILL)
    child.wait(timeout=30)
    assert _owned_by(stamps) == left  # what it made stays, until the next run

    assert _settled(lambda: _marked(mark)) == [], "processes of the killed migrate still run"
    assert _settled(lambda: _host_sessions(site)) == [], "its sessions still run on the hosts"

    (tree / "big.bin").write_bytes(new)
    done = CliRunner().invoke(cli, ["migrate", "loop", "--target", str(tree), "--config", str(config)])
    assert done.exit_code == 0 and "2/2 hosts ok and verified" in done.stdout, done.output
    assert not any(os.path.exists(p) for p in left)  # swept: its owner is gone
    time.sleep(3)  # what a transfer of the killed run still under way would rename in, it would have by now
    for alias in ("node1", "node2"):
        assert hashlib.sha256((site.root(alias) / "big.bin").read_bytes()).digest() == hashlib.sha256(new).digest()


def test_a_killed_rerun_leaves_the_hosts_last_tree_whole(site: Site, tmp_path: Path) -> None:
    """Into a root that holds a tree, rsync parks every file it receives and renames them all in
    at the end (--delay-updates): a migrate killed mid-transfer leaves the host's last tree as it
    was, never half old and half new. (Only a transfer into a root that held nothing skips that:
    the test above kills one, and the next run sends and verifies.)"""
    tree = make_repo(tmp_path / "src", {"verl/__init__.py": "", "a.txt": "old\n"})
    old = os.urandom(3 << 20)
    (tree / "big.bin").write_bytes(old)
    first = _migrate(tree, site.config("", ["node1"]), tmp_path)
    out, err = first.communicate(timeout=120)
    assert first.returncode == 0 and "1/1 hosts ok and verified" in out, out + err
    root = site.root("node1")
    # sent first (rsync sends in name order), then the big file; each of a new size, as rsync's
    # quick check passes a file of the old size written in the same second (a repair sends it)
    (tree / "a.txt").write_text("newer\n")
    (tree / "big.bin").write_bytes(os.urandom((3 << 20) + 1))
    child = _migrate(tree, site.config(SLOW, ["node1"]), tmp_path)
    deadline = time.monotonic() + 30  # until the new big file is arriving, under a name of its own
    while time.monotonic() < deadline and not any(p != root / "big.bin" for p in root.rglob("*big.bin*")):
        time.sleep(0.05)
    time.sleep(0.5)
    os.kill(child.pid, signal.SIGKILL)
    child.wait(timeout=30)
    assert _settled(lambda: _host_sessions(site)) == [], "its sessions still run on the hosts"
    assert (root / "a.txt").read_text() == "old\n"
    assert hashlib.sha256((root / "big.bin").read_bytes()).digest() == hashlib.sha256(old).digest()


def test_two_migrates_to_one_root_take_turns(site: Site, tmp_path: Path) -> None:
    tree = make_repo(tmp_path / "src", {"verl/__init__.py": ""})
    (tree / "big.bin").write_bytes(os.urandom(3 << 20))
    config = site.config(SLOW, ["node1"])
    first = _migrate(tree, config, tmp_path)  # both at once, as two terminals would
    second = _migrate(tree, config, tmp_path / "b", PATCHCTL_LOCK_WAIT="60")
    out1, err1 = first.communicate(timeout=120)
    out2, err2 = second.communicate(timeout=120)
    assert first.returncode == 0 and "1/1 hosts ok and verified" in out1, out1 + err1
    assert second.returncode == 0 and "1/1 hosts ok and verified" in out2, out2 + err2  # waited its turn
    assert "exit 23" not in out1 + out2


def test_a_second_migrate_that_cannot_wait_names_the_first(site: Site, tmp_path: Path) -> None:
    tree = make_repo(tmp_path / "src", {"verl/__init__.py": ""})
    (tree / "big.bin").write_bytes(os.urandom(4 << 20))
    config = site.config(SLOW, ["node1"])
    first = _migrate(tree, config, tmp_path)
    _arriving(site, "node1")
    second = _migrate(tree, config, tmp_path / "b", "--json", PATCHCTL_LOCK_WAIT="1")
    out2, _err2 = second.communicate(timeout=120)
    out1, err1 = first.communicate(timeout=120)
    assert first.returncode == 0, out1 + err1
    assert second.returncode == 1
    (host,) = json.loads(out2)["hosts"]
    expected = (
        f"{site.root('node1')} is being migrated by another patchctl (pid {first.pid}, `patchctl migrate "
        f"loop --target {tree} --config {config}`, since "
    )
    assert host["status"] == "failed" and host["reason"].startswith(expected), host
    assert f"on {socket.gethostname()}); waited 1 s: run migrate again once it has ended" in host["reason"]


def test_a_transfer_still_running_on_the_host_is_never_overtaken(site: Site, tmp_path: Path) -> None:
    """What a killed migrate's rsync would hold on the host: the keeper's ``transfer`` wrapper
    holding ROOT/.patchctl/transfer.lock for as long as the program it became runs."""
    tree = make_repo(tmp_path / "src", {"verl/__init__.py": ""})
    config = site.config("", ["node1"])
    lock = site.root("node1") / lock_agent.TRANSFER
    straggler = subprocess.Popen([sys.executable, lock_agent.__file__, "transfer", str(lock), "1", "sleep", "60"])
    try:
        deadline = time.monotonic() + 10
        while not (lock.exists() and lock.read_text().startswith("rsync pid")) and time.monotonic() < deadline:
            time.sleep(0.05)
        env = {"PATCHCTL_LOCK_WAIT": "1"}
        done = CliRunner(env=env).invoke(cli, ["migrate", "loop", "--target", str(tree), "--config", str(config)])
        assert done.exit_code == 1, done.output
        assert f"a transfer of an earlier migrate still running there (rsync pid {straggler.pid})" in done.stdout
        assert not (site.root("node1") / "verl").exists()  # nothing was sent meanwhile
    finally:
        straggler.kill()
        straggler.wait()
    done = CliRunner().invoke(cli, ["migrate", "loop", "--target", str(tree), "--config", str(config)])
    assert done.exit_code == 0 and "1/1 hosts ok and verified" in done.stdout, done.output
