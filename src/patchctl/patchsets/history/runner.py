"""The walk's git commands, run by a small helper process instead of forked from patchctl itself.

Every child patchctl starts dies with it (:mod:`patchctl.proc`), which costs a ``fork`` of the
whole patchctl process before each ``exec``: its page tables copied, and its memory faulted in
again while the child starts (measured, a 100 MB parent: about 14 ms of CPU per child, against
4 ms for git's own work in a ``git merge-file``). The history walk runs a few hundred short git
commands (the merges of its steps, ``log``, ``rev-parse``, ``merge-base``), so that fork was most
of its cost (issue 38 req 8). A :class:`Runner` starts one helper, a Python interpreter of a few
MB, through :func:`patchctl.proc.spawn` (so it dies with patchctl), and has it start each command
with ``posix_spawn`` (a vfork of the small helper, then git's ``exec``, nothing in between). The
helper leads a process group holding the git it starts, and asks for SIGTERM when patchctl goes,
on which it kills that group, itself included: nothing it starts outlives patchctl either. A
helper killed on its own is found out by its closed pipe, and patchctl kills its group then. (Each
git used to ask for the parent-death signal itself, through ``setpriv --pdeathsig``: one more
``exec`` per command, ~1 ms of CPU, a third of a ``git merge-file``'s.)

The commands are the same git commands, built by :func:`patchctl.git.command` here (the helper
runs the argv it is given, nothing else, and only git's), so their output is the same. A helper
that cannot start or stops answering is given up, and the commands run the usual way.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

from patchctl import git, proc
from patchctl.errors import CommandFailed, PatchctlError

#: the helper: one request per line (a JSON argv list), answered by "rc out-bytes err-bytes\n"
#: and the two outputs. Each child asks for SIGKILL when the helper goes, and the helper goes
#: when patchctl does (its own parent-death signal) or closes its end of the pipe.
_HELPER = r"""
import json, os, signal, subprocess, sys, tempfile
try:
    import ctypes
    prctl = ctypes.CDLL(None, use_errno=True).prctl
except Exception:
    prctl = None
me = os.getpid()
def die_with_helper():
    if prctl is not None:
        prctl(1, 9, 0, 0, 0)
    if os.getppid() != me:
        os._exit(1)
if prctl is not None:
    # the helper leads a process group of its own, which the git it starts is in; when patchctl
    # goes, the helper is sent SIGTERM (in place of the SIGKILL it was started with) and kills
    # that whole group, itself with it. Each git is then started by posix_spawn (vfork) with
    # nothing between fork and exec: no signal request of its own to make, no fork of Python
    os.setpgid(0, 0)
    signal.signal(signal.SIGTERM, lambda *_: os.killpg(0, signal.SIGKILL))
    prctl(1, signal.SIGTERM, 0, 0, 0)
errors = tempfile.TemporaryFile()
def spawned(argv):
    errors.seek(0)
    errors.truncate()
    r, w = os.pipe()
    try:
        actions = [(os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0), (os.POSIX_SPAWN_DUP2, w, 1),
                   (os.POSIX_SPAWN_DUP2, errors.fileno(), 2)]
        pid = os.posix_spawnp(argv[0], argv, os.environ, file_actions=actions)
    finally:
        os.close(w)
    with os.fdopen(r, "rb") as out:
        data = out.read()
    rc = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
    errors.seek(0)
    return rc, data, errors.read()
requests, answers = sys.stdin.buffer, sys.stdout.buffer
for line in requests:
    argv = json.loads(line)
    if not (isinstance(argv, list) and argv[:3] == ["git", "-c", "core.hooksPath=/dev/null"]):
        break
    try:
        if prctl is not None:
            rc, out, err = spawned(argv)
        else:
            done = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, preexec_fn=die_with_helper)
            rc, out, err = done.returncode, done.stdout, done.stderr
    except OSError as exc:
        rc, out, err = 127, b"", str(exc).encode()
    answers.write(b"%d %d %d\n" % (rc, len(out), len(err)) + out + err)
    answers.flush()
"""


class Runner:
    """git commands for one repository (or scratch folder), run through the helper; thread-safe."""

    def __init__(self) -> None:
        self._child: subprocess.Popen[bytes] | None = None
        self._broken = False
        self._lock = threading.Lock()

    def close(self) -> None:
        with self._lock:
            child, self._child = self._child, None
        if child is not None:
            assert child.stdin is not None
            with contextlib.suppress(OSError):
                child.stdin.close()
            try:
                child.wait(timeout=5)
            except subprocess.TimeoutExpired:
                _end_group(child)
                child.kill()
                child.wait()

    def run(self, repo: Path, *args: str, check: bool = True) -> tuple[int, bytes]:
        """``git -C repo ARGS`` (:func:`patchctl.git.command`): its exit code and its output.
        With ``check``, a non-zero exit raises :class:`CommandFailed`, as :func:`patchctl.git.run`."""
        argv = git.command(repo, *args)
        answer = self._ask(argv)
        if answer is None:  # no helper: the usual way
            done = proc.run(argv, check=False)
            answer = (done.returncode, done.stdout.encode("utf-8", "surrogateescape"), done.stderr)
        rc, out, err = answer
        if check and rc != 0:
            raise CommandFailed(argv, rc, err or out.decode("utf-8", "replace"))
        return rc, out

    def _ask(self, argv: list[str]) -> tuple[int, bytes, str] | None:
        if tuple(argv[1:3]) != proc.GIT_FIRST:  # the guard proc.run applies to every git argv
            raise proc.UnguardedGit(argv)
        with self._lock:
            child = self._start()
            if child is None:
                return None
            assert child.stdin is not None and child.stdout is not None
            try:
                child.stdin.write(json.dumps(argv).encode() + b"\n")
                child.stdin.flush()
                head = child.stdout.readline().split()
                rc, n_out, n_err = (int(v) for v in head)
                out, err = child.stdout.read(n_out), child.stdout.read(n_err)
            except (OSError, ValueError):
                self._give_up()
                return None
            if len(out) != n_out or len(err) != n_err:
                self._give_up()
                return None
        return rc, out, err.decode("utf-8", "replace")

    def _start(self) -> subprocess.Popen[bytes] | None:
        if self._child is None and not self._broken:
            try:
                self._child = proc.spawn(
                    [sys.executable, "-I", "-S", "-c", _HELPER], stdin=subprocess.PIPE, stdout=subprocess.PIPE
                )
            except (OSError, PatchctlError):  # no interpreter to start (an embedded patchctl): the usual way
                self._broken = True
        return self._child

    def _give_up(self) -> None:
        self._broken = True
        child, self._child = self._child, None
        if child is not None:
            _end_group(child)
            child.kill()
            child.wait()


def _end_group(child: subprocess.Popen[bytes]) -> None:
    """Kill the helper's process group: the git it was running when it was killed on its own.

    The helper's parent-death signal covers patchctl going; this covers the helper going alone
    (a ``kill -9`` of its pid). Its git is left in the group the helper led, and nothing else would
    end it. The group's id is the helper's pid, which cannot name another process's group while
    the helper is not yet reaped (this runs before ``wait``). A helper that never made its group
    (no ``prctl``) leaves no such group: nothing to kill."""
    with contextlib.suppress(OSError):
        os.killpg(child.pid, signal.SIGKILL)
