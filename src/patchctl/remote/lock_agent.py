"""patchctl's lock keeper on a cluster host: sent as source (``python3 -c``), stdlib only,
python3 >= 3.6, never imports patchctl (like ``migrate/remote_agent.py``).

Two locks per host root, both ``flock`` on files under ``ROOT/.patchctl/``:

- ``migrate.lock``, a migrate's for its whole run: ``hold`` takes it, says so on stdout, and
  keeps it until its stdin ends, which happens when migrate closes it, exits or is killed (the
  ssh session goes with it), so a dead migrate never holds a root.
- ``transfer.lock``, whoever writes files into the root right now: the host's rsync, started
  through ``transfer`` (it takes the lock and execs rsync, which keeps it, and so do rsync's
  own forks, until the last of them ends) and the agent's ``finish``. ``hold`` waits until no
  one holds it before it answers: a transfer of a killed migrate may still be running on the
  host, and must end before a new migrate looks at the root, or it would rename stale files
  in after the new one verified them.

``hold`` reads the root, the seconds to wait and the holder (see ``request``) and answers one
line: ``locked`` (with a tab and ``empty`` for a root of this user's that holds nothing but
``.patchctl``, see ``holds_nothing``), or ``busy`` or ``error`` with the reason after a tab.
"""

import fcntl
import os
import sys
import time

SESSION = ".patchctl/migrate.lock"
TRANSFER = ".patchctl/transfer.lock"


class Outside(Exception):
    """The root's ``.patchctl`` leads elsewhere (a symlink): no lock file is made through it."""


def take(path: str, wait: float, exclusive: bool = True) -> "int | None":
    """The descriptor of ``path`` (a lock file in a root's ``.patchctl``) locked, or None after
    ``wait`` seconds."""
    folder = os.path.dirname(path)
    os.makedirs(folder, exist_ok=True)
    real_root = os.path.realpath(os.path.dirname(folder))
    if os.path.realpath(folder) != os.path.join(real_root, os.path.basename(folder)):
        raise Outside(f"{folder} leads out of the root; make it a folder there")
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
    deadline = time.monotonic() + wait
    while True:
        try:
            fcntl.flock(fd, (fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH) | fcntl.LOCK_NB)
            return fd
        except OSError:
            if time.monotonic() >= deadline:
                os.close(fd)
                return None
            time.sleep(0.05)


def note(fd: int, text: str) -> None:
    os.ftruncate(fd, 0)
    os.lseek(fd, 0, os.SEEK_SET)
    os.write(fd, text.encode("utf-8", "replace"))


def said(path: str) -> str:
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read().strip()
    except OSError:
        return ""


def request() -> "tuple[str, float, str] | None":
    """The root, the seconds to wait and the holder's description: three fields on stdin, each
    ended by a NUL (which no path or command line holds; a newline may be in either). None at
    end-of-file before them: started ahead and not needed after all. Not JSON: its import is
    ~6 ms of the keeper's start, and a first migrate's transfer waits for this answer."""
    data = b""
    while data.count(b"\0") < 3:
        chunk = os.read(0, 65536)
        if not chunk:
            return None
        data += chunk
    root, wait, holder = data.split(b"\0")[:3]
    return root.decode("utf-8", "surrogateescape"), float(wait), holder.decode("utf-8", "replace")


def hold() -> None:
    asked = request()
    if asked is None:
        return  # migrate stopped before any write: nothing is made on the host
    root, wait, holder = asked
    try:
        session = take(os.path.join(root, SESSION), wait)
    except (Outside, OSError) as exc:
        return answer("error", str(exc))
    if session is None:
        return answer("busy", said(os.path.join(root, SESSION)) or "another migrate")
    note(session, holder)
    transfer = take(os.path.join(root, TRANSFER), wait)
    if transfer is None:
        who = said(os.path.join(root, TRANSFER))
        return answer("busy", "a transfer of an earlier migrate still running there" + (f" ({who})" if who else ""))
    os.close(transfer)  # free: this run's own rsync and agents take it in turn
    answer("locked", "empty" if holds_nothing(root) else "")
    while os.read(0, 65536):  # until migrate lets go, exits, or dies (end-of-file in every case)
        pass


def holds_nothing(root: str) -> bool:
    """Whether ``root`` holds nothing but patchctl's own folder and is this user's, asked with
    both locks held, so no transfer of another migrate writes into it meanwhile: a first
    transfer into it has no earlier tree to keep whole, and may set the root's time (see
    migrate.transfer), which only its owner can."""
    try:
        if os.stat(root).st_uid != os.geteuid():
            return False
        with os.scandir(root) as entries:
            return all(e.name == ".patchctl" for e in entries)
    except OSError:
        return False


def answer(kind: str, text: str = "") -> None:
    """One line: ``locked``, or ``busy`` / ``error``, a tab and why (on one line)."""
    sys.stdout.write(kind + ("\t" + " ".join(text.split("\n")) if text else "") + "\n")
    sys.stdout.flush()


def transfer(lock_path: str, wait: float, argv: "list[str]") -> None:
    """Take the transfer lock (waiting ``wait`` seconds for the run's own agent, which holds it
    while it writes), then become ``argv`` (rsync), which keeps the lock open."""
    try:
        fd = take(lock_path, wait)
    except (Outside, OSError) as exc:
        sys.stderr.write(f"patchctl: {exc}\n")
        sys.exit(5)
    if fd is None:
        sys.stderr.write(f"patchctl: {lock_path} is held by another transfer ({said(lock_path)})\n")
        sys.exit(5)
    note(fd, f"rsync pid {os.getpid()}")
    os.set_inheritable(fd, True)
    os.execvp(argv[0], argv)  # noqa: S606 - becomes rsync, an argv list patchctl built; no shell


def main() -> None:
    if sys.argv[1] == "hold":
        hold()
    else:
        transfer(sys.argv[2], float(sys.argv[3]), sys.argv[4:])


if __name__ == "__main__":
    main()
