"""The one way patchctl runs another program: an argv list, never a shell string.

Every child dies with patchctl. ``kill -9`` of patchctl runs no ``finally``, so closing children
on the way out cannot be the whole answer: each child asks the kernel for SIGKILL when its
parent goes (``PR_SET_PDEATHSIG``, Linux). The kernel sends it when the *thread* that forked the
child ends, not the process, so :func:`spawn` forks from one thread that lives as long as
patchctl (:class:`_Spawner`), whatever thread calls it; :func:`run` waits in the calling thread,
which therefore outlives its child. A child in a session of its own (``new_session``: the
trainer, a Ray head) takes others into its group that the signal does not reach; its group is
written down (:mod:`patchctl.orphans`) and the next patchctl that makes a scratch folder or
starts such a child (train, migrate, validate, matrix) ends it.
"""

from __future__ import annotations

import os
import queue
import shutil
import signal
import subprocess
import sys
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO, Any

from patchctl.errors import CommandFailed, ToolMissing

#: what ``spawn`` accepts for a standard stream: subprocess.DEVNULL/PIPE, a file descriptor or a file
Stream = int | IO[Any] | None


#: why a missing program is needed, when the caller does not say (``ToolMissing``'s second half)
RUNS_IT = "patchctl runs it as a subprocess"

#: the options every git command starts with, put there by :func:`patchctl.git.command` with the
#: rest of its overrides (a repository's config runs no program, issue 41); a git argv without
#: them was built somewhere else, and is refused before it runs
GIT_FIRST = ("-c", "core.hooksPath=/dev/null")


class UnguardedGit(Exception):
    """A git command not built by :func:`patchctl.git.command`: a bug in patchctl (exit 3), never
    something a user's input causes."""

    def __init__(self, argv: Sequence[str]) -> None:
        super().__init__(f"git run without patchctl.git's overrides: {' '.join(argv)}")


def _libc_prctl() -> object | None:
    """``prctl`` looked up before any fork: the child between fork and exec must not load
    libraries (another thread may have held the loader's lock at the fork)."""
    if not sys.platform.startswith("linux"):
        return None
    # here, not at the top: ctypes costs every start-up ~5 ms, and many commands never fork
    import ctypes

    # the running program's own symbols, libc's among them: ctypes.util.find_library("c") ran
    # `ldconfig -p` in a child process at every start of patchctl
    for library in (None, "libc.so.6"):
        try:
            return ctypes.CDLL(library, use_errno=True).prctl
        except (OSError, AttributeError):
            continue
    return None


#: libc's ``prctl`` once :func:`ready_to_fork` looked it up (``_UNSET`` before)
_UNSET = object()
_prctl: object | None = _UNSET
_prctl_lock = threading.Lock()
_PR_SET_PDEATHSIG = 1


def ready_to_fork() -> object | None:
    """Look ``prctl`` up, in the parent, once; every path that forks calls this first.

    A child calls only the function found here (:func:`_die_with`), never the lookup: loading a
    library between fork and exec could hang on a lock another thread held at the fork.
    """
    global _prctl
    if _prctl is _UNSET:
        with _prctl_lock:
            if _prctl is _UNSET:
                _prctl = _libc_prctl()
    return _prctl


def die_with_parent() -> None:
    """For a child that is not exec'd (a process pool's worker, its parent having called
    :func:`ready_to_fork` before it made the pool): die with the process that forked it, as
    :func:`spawn`'s children do."""
    _die_with(os.getppid())


def _die_with(parent: int) -> None:
    """In the child before exec: SIGKILL when the forking thread ends; exit at once when the
    parent is already gone (it died between the fork and this call, and would never signal)."""
    prctl = _prctl
    if prctl is not None and prctl is not _UNSET:
        prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)  # type: ignore[operator] # libc's prctl found through ctypes, untyped
        if os.getppid() != parent:
            os._exit(1)


class _Spawner(threading.Thread):
    """The one thread that forks background children: it lives as long as patchctl, so their
    parent-death signal fires when patchctl dies, not when a worker thread that started them
    ends (a Ray node's ssh session, started on a pool thread, outlives that pool)."""

    def __init__(self) -> None:
        super().__init__(name="patchctl-spawner", daemon=True)
        self.jobs: queue.Queue[tuple[dict[str, Any], queue.Queue[Any]]] = queue.Queue()
        self.start()

    def run(self) -> None:
        while True:
            kwargs, answer = self.jobs.get()
            try:
                answer.put(subprocess.Popen(**kwargs))
            except BaseException as exc:  # handed to the caller's thread, which raises it
                answer.put(exc)

    def popen(self, **kwargs: Any) -> subprocess.Popen[bytes]:
        answer: queue.Queue[subprocess.Popen[bytes] | BaseException] = queue.Queue(maxsize=1)
        self.jobs.put((kwargs, answer))
        got = answer.get()
        if isinstance(got, BaseException):
            raise got
        return got


_spawner: _Spawner | None = None
_spawner_lock = threading.Lock()


def _spawn_thread() -> _Spawner:
    global _spawner
    with _spawner_lock:
        if _spawner is None or not _spawner.is_alive():
            _spawner = _Spawner()
        return _spawner


def _argv(argv: Sequence[str], why: str = RUNS_IT, env: Mapping[str, str] | None = None) -> list[str]:
    """``argv`` as strings, its program checked first so a missing tool is one clear line.

    With ``env`` the program is looked up on that environment's PATH, as the child's exec does.
    """
    argv = [str(a) for a in argv]
    if os.path.basename(argv[0]) == "git" and tuple(argv[1:3]) != GIT_FIRST:
        raise UnguardedGit(argv)
    path = None if env is None else os.pathsep.join(os.get_exec_path(dict(env)))
    if shutil.which(argv[0], path=path) is None and not Path(argv[0]).exists():
        raise ToolMissing(argv[0], why)
    return argv


def run(
    argv: Sequence[str],
    *,
    cwd: Path | str | None = None,
    env: Mapping[str, str] | None = None,
    check: bool = True,
    input: str | None = None,
    timeout: float | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run ``argv`` and capture text output.

    With ``check`` a non-zero exit raises :class:`CommandFailed`, whose message carries the
    command, the exit code and the tail of stderr, so callers need no error plumbing of their own.
    """
    argv = _argv(argv)
    ready_to_fork()
    parent = os.getpid()
    done = subprocess.run(
        argv,
        preexec_fn=lambda: _die_with(parent),
        cwd=cwd,
        env=dict(env) if env is not None else None,
        input=input,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    if check and done.returncode != 0:
        raise CommandFailed(argv, done.returncode, done.stderr or done.stdout)
    return done


def spawn(
    argv: Sequence[str],
    *,
    stdin: Stream = subprocess.DEVNULL,
    stdout: Stream = subprocess.DEVNULL,
    stderr: Stream = subprocess.DEVNULL,
    cwd: Path | str | None = None,
    env: Mapping[str, str] | None = None,
    new_session: bool = False,
    why: str = RUNS_IT,
) -> subprocess.Popen[bytes]:
    """Start ``argv`` in the background and return it running (byte streams).

    For the few programs that cannot simply be run to the end: one whose output is read while it
    runs (rsync's per-file progress, the trainer's log), one kept alive beside other work (an ssh
    master connection, a Ray head node), one started before its input is known (a host's agent,
    given its request later). Same rules as :func:`run` — an argv list, never a shell, a missing
    program raises :class:`ToolMissing` (``why`` says what it is needed for) — but the caller owns
    the process: it must wait for it (or kill it) and judge its exit code. Standard streams default
    to /dev/null so a forgotten pipe can never block the child.

    ``env`` is the child's whole environment (None: this process's). ``new_session`` starts it in
    a session and process group of its own, so the caller can end it with everything it started
    (``os.killpg``) and a Ctrl-C at the terminal reaches patchctl alone, which then decides; that
    group is recorded so that the next patchctl ends it if this one is killed (see the module).
    """
    argv = _argv(argv, why, env)
    ready_to_fork()
    parent = os.getpid()
    try:
        child = _spawn_thread().popen(
            args=argv,
            stdin=stdin,
            stdout=stdout,
            stderr=stderr,
            cwd=cwd,
            env=dict(env) if env is not None else None,
            start_new_session=new_session,
            preexec_fn=lambda: _die_with(parent),
        )
    except FileNotFoundError:  # found by the check above, gone (or not executable by that name) at exec
        raise ToolMissing(argv[0], why) from None
    if new_session:
        from patchctl import orphans

        orphans.track_group(child.pid)
    return child
