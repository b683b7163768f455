"""capture reads only regular files inside FORK and BASE (issue 41).

A symlink leading out of the tree, committed or not, is never followed: the file it names is not
shipped. A FIFO, a socket or a link to ``/dev/zero`` is skipped with a note, not read (a FIFO
would block capture forever, ``/dev/zero`` would fill memory). ``--out`` inside FORK or BASE is
refused. capture runs here as a real process under a timeout and a memory limit, so broken code
fails the test instead of hanging it or the machine.
"""

from __future__ import annotations

import json
import os
import resource
import socket
import subprocess
import sys
from pathlib import Path

SECRET = "TOKEN = 'outside-the-fork'  # Uky\n"
IDENT = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}


def _limits() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))  # /dev/zero read whole would take them all


def capture(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "patchctl", "capture", *args],
        capture_output=True,
        text=True,
        timeout=60,
        preexec_fn=_limits,
        env={**os.environ, **IDENT},
    )


def tree(root: Path, files: dict[str, str]) -> Path:
    for rel, text in {"verl/__init__.py": "", **files}.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def commit(root: Path) -> None:
    env = {**os.environ, **IDENT}
    subprocess.run(["git", "init", "-q", "-b", "main", str(root)], check=True, env=env)
    subprocess.run(["git", "-C", str(root), "add", "-A"], check=True, env=env)
    subprocess.run(["git", "-C", str(root), "commit", "-qm", "fork"], check=True, env=env)


def shipped(out: Path) -> str:
    return "".join(p.read_text(errors="replace") for p in out.rglob("*") if p.is_file())


def outside(tmp: Path) -> Path:
    (tmp / "outside").mkdir()
    (tmp / "outside" / "secret.py").write_text(SECRET)
    return tmp / "outside" / "secret.py"


def test_a_symlink_out_of_a_git_fork_committed_or_not_is_never_followed(tmp_path: Path) -> None:
    secret = outside(tmp_path)
    base = tree(tmp_path / "base", {"verl/m.py": "x = 1\n"})
    fork = tree(tmp_path / "fork", {"verl/m.py": "x = 1\ny = 2  # Uky\n"})
    os.symlink(secret, fork / "verl" / "secret.py")
    os.symlink("/dev/zero", fork / "verl" / "zero.py")
    commit(fork)  # both links are in the fork's history
    os.symlink(os.path.relpath(secret, fork / "verl"), fork / "verl" / "loose.py")  # untracked
    done = capture("--from", str(fork), "--base", str(base), "--out", str(tmp_path / "out"), "--all", "--json")
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert [p["path"] for p in doc["patches"]] == ["verl/m.py"]
    assert "outside-the-fork" not in shipped(tmp_path / "out")
    assert [n for n in doc["notes"] if "symlink" in n] == [
        f"verl/loose.py: in FORK it leads out of the tree through a symlink (to {secret}); skipped, not read",
        f"verl/secret.py: in FORK it leads out of the tree through a symlink (to {secret}); skipped, not read",
        "verl/zero.py: in FORK it leads out of the tree through a symlink (to /dev/zero); skipped, not read",
    ]


def test_a_fifo_a_socket_and_dev_zero_are_skipped_with_a_note(tmp_path: Path) -> None:
    """In a fork git does not know (every name is walked), and in BASE too: the note says which."""
    secret = outside(tmp_path)
    base = tree(tmp_path / "base", {"verl/m.py": "x = 1\n", "verl/pipe.py": "p = 1\n"})
    os.symlink(secret, base / "verl" / "leak.py")
    fork = tree(tmp_path / "fork", {"verl/m.py": "x = 1\ny = 2  # Uky\n"})
    os.mkfifo(fork / "verl" / "pipe.py")
    os.mkfifo(fork / "verl" / "new_pipe.py")
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(fork / "verl" / "s.sock"))
    os.symlink("/dev/zero", fork / "zero.py")
    os.symlink(tmp_path / "outside", fork / "elsewhere")  # a folder out of the tree: not entered
    try:
        done = capture("--from", str(fork), "--base", str(base), "--out", str(tmp_path / "out"), "--all", "--json")
    finally:
        server.close()
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert [p["path"] for p in doc["patches"]] == ["verl/m.py"]  # pipe.py is neither deleted nor changed
    assert "outside-the-fork" not in shipped(tmp_path / "out")
    assert [n for n in doc["notes"] if "skipped, not read" in n] == [
        f"elsewhere: in FORK it leads out of the tree through a symlink (to {tmp_path / 'outside'}); skipped, not read",
        "verl/new_pipe.py: in FORK it is a FIFO, not a regular file; skipped, not read",
        "verl/pipe.py: in FORK it is a FIFO, not a regular file; skipped, not read",
        "verl/s.sock: in FORK it is a socket, not a regular file; skipped, not read",
        "zero.py: in FORK it leads out of the tree through a symlink (to /dev/zero); skipped, not read",
        f"verl/leak.py: in BASE it leads out of the tree through a symlink (to {secret}); skipped, not read",
    ]


def test_a_tracked_file_turned_fifo_is_skipped_not_deleted(tmp_path: Path) -> None:
    base = tree(tmp_path / "base", {"verl/m.py": "x = 1\n", "verl/pipe.py": "p = 1\n"})
    fork = tree(tmp_path / "fork", {"verl/m.py": "x = 1\ny = 2  # Uky\n", "verl/pipe.py": "p = 1\n"})
    commit(fork)
    (fork / "verl" / "pipe.py").unlink()
    os.mkfifo(fork / "verl" / "pipe.py")
    done = capture("--from", str(fork), "--base", str(base), "--all", "--dry-run", "--json")
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert [(p["path"], p["kind"]) for p in doc["patches"]] == [("verl/m.py", "structural")]
    assert "verl/pipe.py: in FORK it is a FIFO, not a regular file; skipped, not read" in doc["notes"]


def test_a_committed_symlink_out_of_a_ref_base_is_not_exported(tmp_path: Path) -> None:
    """BASE as a ref of FORK: its tree is written from the blobs, and a link leading out is left out."""
    secret = outside(tmp_path)
    fork = tree(tmp_path / "fork", {"verl/m.py": "x = 1\n"})
    os.symlink(os.path.relpath(secret, fork / "verl"), fork / "verl" / "secret.py")
    os.symlink("m.py", fork / "verl" / "same.py")  # inside the tree: kept
    commit(fork)
    subprocess.run(["git", "-C", str(fork), "tag", "v1"], check=True)
    (fork / "verl" / "m.py").write_text("x = 1\ny = 2  # Uky\n")
    done = capture("--from", str(fork), "--base", "v1", "--dry-run", "--json")
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert sorted(p["path"] for p in doc["patches"]) == ["verl/m.py", "verl/same.py"]
    assert "verl/secret.py: in FORK it leads out of the tree through a symlink" in "\n".join(doc["notes"])
    assert not [n for n in doc["notes"] if "in BASE" in n]  # the exported BASE holds no such link at all


def test_out_inside_fork_or_base_is_refused_with_one_line(tmp_path: Path) -> None:
    base = tree(tmp_path / "base", {"verl/m.py": "x = 1\n"})
    fork = tree(tmp_path / "fork", {"verl/m.py": "x = 1\ny = 2  # Uky\n"})
    held = tmp_path / "old-patchset"
    (held / "patchset.toml").parent.mkdir()
    (held / "patchset.toml").write_text('[patchset]\nname = "old"\ntag = "Uky"\n')
    inner = tree(held / "fork", {"verl/m.py": "x = 1\ny = 2  # Uky\n"})  # publishing would swap it away
    before = sorted(str(p) for p in tmp_path.rglob("*"))
    for the_fork, out, name, where, top in (
        (fork, fork / "patches", "FORK", "is inside", fork),
        (fork, fork, "FORK", "is inside", fork),
        (fork, base / "verl" / "ps", "BASE", "is inside", base),
        (inner, held, "FORK", "holds", inner),
    ):
        done = capture("--from", str(the_fork), "--base", str(base), "--out", str(out))
        assert done.returncode == 2
        assert done.stdout + done.stderr == (
            f"error: --out {out}: {where} {name} ({top}); choose a directory outside FORK and BASE\n"
        )
    assert sorted(str(p) for p in tmp_path.rglob("*")) == before  # no scratch folder, no parent made
