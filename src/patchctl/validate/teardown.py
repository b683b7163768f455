"""Step ``teardown``: stop exactly what this run started, on every host, however the run ended.

:class:`Started` owns the run's host sessions (one Ray-node supervisor per host, the trainer on
the head). Teardown first asks each live supervisor to stop ("stop" line: it ends its ``ray
start --block`` and every process carrying its marker) and reads its count back. Where a
session is gone — Ctrl-C reached ssh, the host dropped — the supervisor has already seen
end-of-file and stopped by itself; a fresh ssh then runs ``reap`` there to confirm nothing of the
node's marker is left. A host that cannot be reached at all is reported, never guessed.
A node validate only joined (--join) is left running.

A node's session is opened only through :meth:`Started.open`, under the same lock teardown takes
to see what to stop. A worker's start runs on a pool thread, and a Ctrl-C can end the main thread's
wait for it before the pool has even recorded that thread; the start then goes on after teardown
has looked, and its Ray node outlived the run (a leak ``tests/cli/test_demo.py`` caught). Now the
session is either opened first and stopped by teardown, or refused once teardown has begun.

While the run goes, :class:`Started` also keeps its lease with every host: a heartbeat line to
each session every ``plan.beat`` seconds. A host that hears nothing for ``--lease`` seconds (a
frozen or suspended patchctl, a partitioned network) stops its Ray node by itself.
"""

from __future__ import annotations

import queue
import signal
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager

from patchctl.remote import ssh
from patchctl.validate import plan as planning
from patchctl.validate import remote
from patchctl.validate.model import HostTeardown, Node, Note


class Started:
    """The host sessions a run opened, by node index; :meth:`teardown` ends them all."""

    def __init__(self, plan: planning.Plan, conns: ssh.Connections, interrupts: Interrupts) -> None:
        self.plan, self.conns, self._interrupts = plan, conns, interrupts
        self.nodes: dict[int, remote.Session] = {}
        #: indices of nodes validate joined instead of starting (left alone)
        self.joined: set[int] = set()
        self.trainer: remote.Session | None = None
        self._lock = threading.Lock()
        self._closed = False
        self._beating = threading.Event()
        self._heart = threading.Thread(target=self._beat, name="validate-heartbeat", daemon=True)
        self._heart.start()

    def open(self, node: Node, make: Callable[[], remote.Session], *, trainer: bool = False) -> remote.Session:
        """Open ``node``'s session with ``make`` and record it (as the trainer's with ``trainer``),
        unless teardown has begun (then :class:`TornDown`, and nothing is started on the host). A
        Ctrl-C in between waits until the session is recorded: one raised after ssh started but
        before the record would leave a Ray node, or a trainer, teardown never hears of."""
        with self._lock, self._interrupts.held():
            if self._closed:
                raise TornDown(node.label)
            session = make()
            if trainer:
                self.trainer = session
            else:
                self.nodes[node.index] = session
            return session

    def _beat(self) -> None:
        """Renew the lease of every live session until teardown is over."""
        while not self._beating.wait(self.plan.beat):
            for session in [*list(self.nodes.values()), self.trainer]:
                if session is not None and session.alive():
                    session.send({"cmd": "beat"})

    def teardown(self, note: Callable[[Note], None]) -> tuple[HostTeardown, ...]:
        try:
            return self._teardown(note)
        finally:
            self._beating.set()

    def _teardown(self, note: Callable[[Note], None]) -> tuple[HostTeardown, ...]:
        with self._lock:  # a start still opening its session finishes first; any later one is refused
            self._closed = True
        if self.trainer is not None:
            self.trainer.send({"cmd": "stop"})
            self.trainer.close(wait=30)
        todo = [n for n in self.plan.nodes if n.index in self.nodes]
        if not todo:
            return ()
        with ThreadPoolExecutor(max_workers=len(todo)) as pool:
            done = list(pool.map(self._stop, todo))
        for row in done:
            note(Note("teardown", row.label, row.status + (f": {row.reason}" if row.reason else "")))
        return tuple(done)

    def _stop(self, node: Node) -> HostTeardown:
        session = self.nodes.get(node.index)
        if node.index in self.joined:
            if session is not None:
                session.send({"cmd": "stop"})
                session.close(wait=10)
            return HostTeardown(
                node.label, "joined-left-alone", reason="it was running before; validate only joined it"
            )
        if session is not None and session.send({"cmd": "stop"}):
            try:
                event = session.until(["stopped"], timeout=60)
                session.close(wait=10)
                left = tuple(event.get("left", ()))
                return HostTeardown(
                    node.label,
                    "stopped" if not left else "left-behind",
                    int(event.get("stopped", 0)),
                    left,
                    f"pids {list(left)} would not stop" if left else "",
                )
            except (remote.Ended, queue.Empty):
                session.close(wait=5)
        elif session is not None:
            session.close(wait=5)
        return self._reap(node)

    def _reap(self, node: Node) -> HostTeardown:
        """A fresh login (the run's own may be gone with the session) and ``reap`` there."""
        master = ssh.Master(self.plan.cluster, node.host, self.conns.dir, 100 + node.index)
        try:
            failed = master.open()
            if failed:
                return HostTeardown(
                    node.label,
                    "unreachable",
                    reason=f"{failed}; its Ray node stops by itself when "
                    "its ssh session ends (the supervisor ends Ray on end-of-file)",
                )
            reply = remote.call(
                self.plan.cluster, node, "reap", {"marker": self.plan.marker(node)}, timeout=60, control=master.socket
            )
        except (remote.Ended, queue.Empty) as exc:
            return HostTeardown(node.label, "unreachable", reason=f"reap did not answer ({exc})")
        finally:
            master.close()
        left = tuple(reply.get("left", ()))
        status = "left-behind" if left else "stopped"
        return HostTeardown(
            node.label, status, int(reply.get("stopped", 0)), left, f"pids {list(left)} would not stop" if left else ""
        )


class TornDown(Exception):
    """A node's start came after teardown had begun (the run was interrupted or failed meanwhile)."""

    def __init__(self, label: str) -> None:
        super().__init__(f"{label}: not started: the run is already tearing down")


class Interrupts:
    """Ctrl-C (SIGINT) at any stage ends the run as INTERRUPTED: the handler records it before it
    raises, so a KeyboardInterrupt that some library swallows still counts (:meth:`check` raises
    it again at the next step, and the verdict reads :attr:`seen`)."""

    def __init__(self) -> None:
        self.seen = False
        self._raising = True
        self._holding = 0
        self._previous: object = None

    def __enter__(self) -> Interrupts:
        if threading.current_thread() is threading.main_thread():
            self._previous = signal.signal(signal.SIGINT, self._handler)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._previous is not None:
            signal.signal(signal.SIGINT, self._previous)  # type: ignore[arg-type] # _previous is what signal.getsignal returned, which signal.signal takes back

    def _handler(self, signum: int, frame: object) -> None:
        self.seen = True
        if self._raising and not self._holding:
            raise KeyboardInterrupt

    @contextmanager
    def held(self) -> Iterator[None]:
        """A Ctrl-C inside the block is raised when the block ends, not in the middle of it. Only
        the main thread is interrupted, so only there is anything held (a worker's block must not
        delay, or raise, the main thread's interrupt)."""
        if threading.current_thread() is not threading.main_thread():
            yield
            return
        self._holding += 1
        try:
            yield
        finally:
            self._holding -= 1
        if self.seen and self._raising and not self._holding:
            raise KeyboardInterrupt

    def quiet(self) -> None:
        """From now on only record a Ctrl-C (what follows is teardown, which must finish)."""
        self._raising = False

    def check(self) -> None:
        if self.seen:
            raise KeyboardInterrupt


@contextmanager
def no_interrupts() -> Iterator[None]:
    """Teardown must finish: a second Ctrl-C waits until it has (main thread only)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
