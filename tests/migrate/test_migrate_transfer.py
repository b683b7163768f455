"""rsync's command line, its output and exit codes; the ssh options rsync and ssh share."""

from __future__ import annotations

import io
import os
import subprocess
from pathlib import Path

import pytest

from patchctl.clusters import Cluster, Host
from patchctl.migrate import transfer
from patchctl.remote import rsync, ssh

HOST = Host("node1", "/srv/verl Uky")


def cluster(tmp_path: Path, **kw: object) -> Cluster:
    return Cluster("c", (HOST,), HOST.root, tmp_path / "patchctl.toml", **kw)


def test_itemized_lines() -> None:
    item = transfer.parse_line("<f+++++++++ 1234 4096 verl/a b.py")
    assert item == transfer.Item("<f+++++++++", 1234, 4096, "verl/a b.py") and item.is_file_sent
    assert not transfer.parse_line("cd+++++++++ 0 4096 verl/").is_file_sent
    assert not transfer.parse_line(".f..t...... 0 10 same.py").is_file_sent
    assert transfer.parse_line("created directory /srv/x") is None


@pytest.mark.parametrize(
    "code, words",
    [
        (23, "partial transfer: some files could not be transferred"),
        (24, "some source files vanished"),
        (30, "timeout"),
        (255, "ssh could not connect"),
        (12, "connection dropped"),
        (99, "exit code 99"),
    ],
)
def test_exit_codes_become_causes(code: int, words: str) -> None:
    msg = rsync.cause(code, "rsync: some detail here\nrsync error: blah (code 23) at main.c(1)\n")
    assert msg.startswith(f"rsync exit {code}: ") and words in msg and "(rsync: some detail here)" in msg


def test_a_host_lost_mid_transfer_is_not_called_never_reached() -> None:
    msg = rsync.cause(255, "client_loop: send disconnect: Broken pipe\n", connected=True)
    assert msg.startswith("rsync exit 255: ssh could not reach the host any more (it went down")
    assert "could not connect" not in msg


def test_missing_rsync_on_the_host_is_named() -> None:
    assert "rsync is not installed on the host" in rsync.cause(12, "bash: line 1: rsync: command not found\n")


def test_argv_never_lets_a_partial_file_become_final(tmp_path: Path) -> None:
    argv = transfer.rsync_argv(
        cluster(tmp_path, bwlimit=500), HOST, Path("/src"), Path("/tmp/list"), dry_run=True, checksum=True
    )
    for flag in ("--delay-updates", "--partial-dir", "--from0", "--files-from", "--dry-run", "--checksum"):
        assert flag in argv
    assert "--inplace" not in argv and "--delete" not in argv  # deletions are the agent's, within the root
    assert argv[argv.index("--bwlimit") + 1] == "500"
    assert argv[-3:] == ["--", "/src/", "node1:/srv/verl Uky/"]


def test_only_a_root_that_held_nothing_goes_without_delay_updates(tmp_path: Path) -> None:
    """Into an empty root both --delay-updates and --omit-dir-times go (see transfer: the one
    without the other doubled rsync's time on 10k files); into any other, both stay."""
    c = cluster(tmp_path)
    held = transfer.rsync_argv(c, HOST, Path("/src"), Path("/tmp/list"), dry_run=False)
    empty = transfer.rsync_argv(c, HOST, Path("/src"), Path("/tmp/list"), dry_run=False, empty_root=True)
    assert "--delay-updates" in held and "--omit-dir-times" in held
    assert [a for a in held if a not in ("--delay-updates", "--omit-dir-times")] == empty


@pytest.mark.usefixtures("rsync_installed")
def test_rsync_and_ssh_reach_hosts_with_the_same_options(tmp_path: Path) -> None:
    """rsync splits -e itself: a fake ssh on PATH records the argv rsync really runs."""
    odd = tmp_path / "my 'ssh' dir"
    odd.mkdir()
    (odd / "config").write_text("")
    c = Cluster("c", (HOST,), HOST.root, tmp_path / "patchctl.toml", odd / "config")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    record = tmp_path / "argv"
    (bin_dir / "ssh").write_text(f'#!/bin/sh\nfor a in "$@"; do printf "%s\\n" "$a"; done > "{record}"\nexit 255\n')
    os.chmod(bin_dir / "ssh", 0o755)
    control = tmp_path / "ctl"
    (tmp_path / "list").write_bytes(b"a\0")
    argv = transfer.rsync_argv(c, HOST, tmp_path, tmp_path / "list", dry_run=False, control=control)
    done = subprocess.run(argv, capture_output=True, text=True, env={**os.environ, "PATH": f"{bin_dir}:/usr/bin:/bin"})
    assert done.returncode in (12, 255), done.stderr  # 255 from ssh, or 12 when rsync sees the closed pipe first
    seen = record.read_text().splitlines()
    expected = ssh.ssh_options(c, control)
    assert seen[: len(expected)] == expected
    assert seen[len(expected)] == "node1"  # then rsync's own remote command follows
    assert ssh.ssh_argv(c, HOST, ["true"], control)[1 : len(expected) + 1] == expected


def test_ssh_options_never_prompt_and_use_the_cluster_config(tmp_path: Path) -> None:
    c = Cluster("c", (HOST,), HOST.root, tmp_path / "patchctl.toml", tmp_path / "ssh_config", timeout=8)
    opts = ssh.ssh_options(c)
    assert opts[:2] == ["-F", str(tmp_path / "ssh_config")]
    assert "BatchMode=yes" in opts and "ConnectTimeout=8" in opts
    argv = ssh.python_argv(c, HOST, "aGVsbG8=")
    assert argv[-7:-1] == ["--", "node1", "python3", "-I", "-S", "-c"]
    assert "'" not in argv[-1].strip("'")  # one quoted word, no quotes inside for any shell to trip on


def test_progress2_lines_are_split_at_carriage_returns_and_read() -> None:
    """rsync rewrites its running total with ``\\r``; the itemized lines still end in ``\\n``."""
    out = (
        b".d..t...... 0 4096 ./\n\r              3   0%    0.00kB/s    0:00:00  \r"
        b"    104,005,635  33%   96.67MB/s    0:00:02 (xfr#1, to-chk=0/3)\n>f+++++++++ 46 3 a\n"
    )
    lines = list(transfer._lines(io.BytesIO(out)))
    assert [transfer.parse_progress(x) for x in lines] == [None, 3, 104005635, None]
    assert transfer.parse_line(lines[-1]) == transfer.Item(">f+++++++++", 46, 3, "a")
