"""`patchctl migrate` through click's CliRunner: exit codes, --json, plain progress, bad config."""

from __future__ import annotations

import hashlib
import json
import os
import pty
import re
import signal
import subprocess
import time
from pathlib import Path

from click.testing import CliRunner
from migrate_fixtures import Site
from migrate_helpers import make_repo, migrate_argv

from patchctl.cli.main import cli


def invoke(*args: str) -> tuple[int, str, str]:
    done = CliRunner().invoke(cli, ["migrate", *args])
    return done.exit_code, done.stdout, done.stderr


def test_json_document_per_host(site: Site, verl_tree: Path) -> None:
    config = site.config('profile = "fast-load"\n[clusters.loop.paths]\nDATA_DIR = "/data"\n', ["node1", "node2"])
    code, out, err = invoke("loop", "--target", str(verl_tree), "--config", str(config), "--json", "--jobs", "1")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["cluster"] == "loop" and doc["ok"] is True
    assert [h["host"] for h in doc["hosts"]] == ["node1", "node2"]
    for h in doc["hosts"]:
        assert {"host", "status", "files_sent", "bytes_sent", "seconds", "verified"} <= set(h)
        assert h["status"] == "ok" and h["verified"] is True and h["files_sent"] == doc["files"]
        assert h["bytes_sent"] > 1_000_000 and h["seconds"] > 0
    env = (site.root("node2") / ".patchctl" / "env.sh").read_text()
    assert "export VLLM_WORKER_MULTIPROC_METHOD=spawn" in env and "export TOKENIZERS_PARALLELISM=false" in env


def test_plain_progress_and_a_failing_host_exits_non_zero(site: Site, tmp_path: Path) -> None:
    tree = make_repo(tmp_path / "src", {"verl/__init__.py": "a = 1\n"})
    config = site.config(aliases=["node3", site.loop.down_alias])
    code, out, err = invoke("loop", "--target", str(tree), "--config", str(config))
    assert code == 1
    assert "node3: transferring" in out and "node3: verifying (1 files" in out
    assert "migrate loop: 1 of 2 host(s) failed" in err
    assert "node-down: unreachable: ssh could not connect" in err


def test_a_repaired_host_is_listed_in_json_and_passes(site: Site, tmp_path: Path) -> None:
    tree = make_repo(tmp_path / "src", {"verl/__init__.py": "a = 1\n", "verl/b.py": "b = 2\n"})
    config = site.config(aliases=["node1", "node2"])
    assert invoke("loop", "--target", str(tree), "--config", str(config))[0] == 0
    victim = site.root("node2") / "verl" / "b.py"
    st = victim.stat()
    victim.write_text("b = 3\n")
    os.utime(victim, ns=(st.st_atime_ns, st.st_mtime_ns))  # what rsync's quick check cannot see

    code, out, err = invoke("loop", "--target", str(tree), "--config", str(config), "--json")
    assert code == 0, err
    node1, node2 = json.loads(out)["hosts"]
    assert (node1["status"], node1["repaired"]) == ("ok", [])
    assert {k: node2[k] for k in ("status", "verified", "files_sent", "repaired", "mismatches", "reason")} == {
        "status": "repaired",
        "verified": True,
        "files_sent": 1,
        "repaired": ["verl/b.py: content differs (sha256)"],
        "mismatches": [],
        "reason": "1 file(s) differed on the host after the transfer; re-sent by content and verified",
    }
    assert victim.read_text() == "b = 2\n"

    victim.write_text("b = 4\n")
    os.utime(victim, ns=(st.st_atime_ns, st.st_mtime_ns))
    code, out, _ = invoke("loop", "--target", str(tree), "--config", str(config))
    assert code == 0
    assert "node2: repaired 1 file(s) that differed there (re-sent by content)\n  verl/b.py: content differs" in out
    assert "migrate loop: 2/2 hosts ok and verified (1 repaired)" in out


def test_dry_run_output_lists_files(site: Site, tmp_path: Path) -> None:
    tree = make_repo(tmp_path / "src", {"verl/__init__.py": "a = 1\n", "b/c.py": ""})
    code, out, _ = invoke("loop", "--target", str(tree), "--config", str(site.config(aliases=["node1"])), "--dry-run")
    assert code == 0
    assert "node1: would send 2 file(s) (6 B), delete 0, render 2" in out  # few items: listed whole
    assert "  send b/c.py" in out and "  render .patchctl/env.sh" in out
    assert "  render git_ignore.py" in out  # from the uky patchset's example, as the tree has none
    assert "1/1 hosts planned" in out
    assert not site.root("node1").exists()


def test_bad_config_is_one_line_naming_the_key(tmp_path: Path) -> None:
    config = tmp_path / "patchctl.toml"
    config.write_text('[clusters.gpu]\nhosts = ["n1"]\nroot = "/r"\nprofile = "turbo"\n')
    code, _, err = invoke("gpu", "--config", str(config))
    assert code == 2
    assert err == (
        f"error: {config}: key 'clusters.gpu.profile': 'turbo' is not allowed; use one of: standard, fast-load\n"
    )


def test_a_root_of_slash_is_one_line_naming_the_key(tmp_path: Path) -> None:
    config = tmp_path / "patchctl.toml"
    config.write_text('[clusters.gpu]\nhosts = ["n1", { ssh = "n2", root = "/tmp/.." }]\nroot = "/r"\n')
    code, _, err = invoke("gpu", "--config", str(config))
    assert (code, err) == (
        2,
        f"error: {config}: key 'clusters.gpu.hosts[1].root': '/tmp/..' is the file system's "
        'root; write the directory the tree lives in, such as "/scratch/verl_Uky"\n',
    )


def test_unknown_cluster(tmp_path: Path) -> None:
    config = tmp_path / "patchctl.toml"
    config.write_text('[clusters.gpu]\nhosts = ["n1"]\nroot = "/r"\n')
    code, _, err = invoke("cpu", "--config", str(config))
    assert code == 2 and "no cluster named 'cpu' (did you mean 'gpu'?) (known: gpu); add [clusters.cpu] there" in err


def test_tracked_output_file_stops_before_any_host(site: Site, tmp_path: Path) -> None:
    tree = make_repo(tmp_path / "src", {"verl/__init__.py": "", "logs/run.txt": "tracked log"})
    code, _, err = invoke("loop", "--target", str(tree), "--config", str(site.config(aliases=["node1"])))
    assert code == 2
    assert "would leave out 1 tracked file(s): logs/run.txt (inside an output directory logs/)" in err
    assert not site.root("node1").exists()


def test_ctrl_c_stops_every_host_and_a_re_run_completes(site: Site, tmp_path: Path) -> None:
    tree = make_repo(tmp_path / "src", {"verl/__init__.py": ""})
    payload = os.urandom(3 << 20)
    (tree / "big.bin").write_bytes(payload)
    config = site.config("bwlimit = 1024\n", ["node1", "node2"])
    argv = migrate_argv(tree, config)
    env = {**os.environ, "PATCHCTL_CACHE": str(tmp_path / "cache")}  # the ordering state stays private
    child = subprocess.Popen(
        argv, start_new_session=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
    )
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and not any("big.bin" in p.name for p in site.root("node1").rglob("*")):
        time.sleep(0.05)
    # not while the hosts' login shells still start: a shell killed inside its rc files can leave
    # them half done (a pyenv init killed in `pyenv rehash` leaves a lock every later login waits on)
    time.sleep(1.0)
    os.killpg(child.pid, signal.SIGINT)  # Ctrl-C at a terminal signals the whole foreground group
    _, err = child.communicate(timeout=60)
    assert child.returncode == 130 and err.endswith("interrupted\n"), err
    assert not any((site.root(a) / "big.bin").exists() for a in ("node1", "node2"))  # no partial file as final

    code, out, err = invoke("loop", "--target", str(tree), "--config", str(config))
    assert code == 0, err
    assert "migrate loop: 2/2 hosts ok and verified" in out
    for alias in ("node1", "node2"):
        assert hashlib.sha256((site.root(alias) / "big.bin").read_bytes()).digest() == hashlib.sha256(payload).digest()


def test_a_terminal_gets_a_live_row_per_host_with_files_and_bytes(site: Site, tmp_path: Path) -> None:
    tree = make_repo(tmp_path / "src", {"verl/__init__.py": "", **{f"verl/m{i}.py": "x" * 15_000 for i in range(20)}})
    config = site.config("bwlimit = 150\n", ["node1", "node2"])  # KiB/s: ~2 s, so the table shows progress
    argv = migrate_argv(tree, config)
    env = {**os.environ, "PATCHCTL_CACHE": str(tmp_path / "cache"), "COLUMNS": "100"}
    leader, terminal = pty.openpty()
    child = subprocess.Popen(argv, stdin=terminal, stdout=terminal, stderr=terminal, env=env)
    os.close(terminal)
    chunks = []
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(leader)
    assert child.wait(timeout=60) == 0
    screen = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", b"".join(chunks).decode("utf-8", "replace"))
    for alias in ("node1", "node2"):  # a live row: host, phase, files so far, bytes so far
        assert re.search(rf"{alias}\s*│\s*transferring\s*│\s*[1-9]\d*\s*│\s*[\d.]+ kB", screen), screen[-3000:]
    assert "migrate loop: 2/2 hosts ok and verified" in screen


def test_help_shows_a_cluster_table_and_every_option() -> None:
    done = CliRunner().invoke(cli, ["migrate", "--help"], prog_name="patchctl", terminal_width=100)
    assert done.exit_code == 0
    for text in (
        "Usage: patchctl migrate [OPTIONS] CLUSTER",
        "[clusters.gpu]",
        'root = "/root/verl_Uky"',
        "--dry-run",
        "--delete",
        "--checksum",
        "-j, --jobs N",
        "--json",
        "--config FILE",
        "patchctl migrate gpu --dry-run --delete",
    ):
        assert text in done.output, text
