"""Where each process of a hung run was waiting: ``py-spy dump`` output read back.

``py-spy dump --pid P`` prints a process's Python threads, innermost frame first::

    Process 812: python -m verl.trainer.main_ppo ...
    Python v3.11.7 (/usr/bin/python3.11)

    Thread 812 (idle): "MainThread"
        all_reduce (torch/distributed/distributed_c10d.py:2050)
        update_actor (verl/workers/fsdp_workers.py:611)

``ray stack`` prints the same for every Ray worker of a node, one after the other. A hung
collective shows as every rank waiting in the same frame but one: the rank that is elsewhere (still
computing, blocked on I/O, in another collective) is the one the others wait for. This module reads
the dumps, picks the frame that says what each process waits on, and names the process whose
stack differs from the others'. The dumps are text from the user's machines: they are parsed, never
run, and each line is matched in time linear in its length.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

#: "Process 812: python -m verl..." (py-spy's first line; the command may run on over lines)
PROCESS = re.compile(r"^Process (\d+): ?(.*)$")
#: 'Thread 812 (idle): "MainThread"' or "Thread 0x7F3A (active)"
THREAD = re.compile(r'^Thread (\w+)(?: \((\w+)\))?(?:: "([^"\n]*)")?')
#: "    all_reduce (torch/distributed/distributed_c10d.py:2050)": a frame, four spaces in; the
#: file and line are the last parenthesised "(path:N)" of the line
FRAME = re.compile(r"^    (\S[^\n]*?) \(([^()\n]*):(\d+)\)$")
#: a dump file's name may carry the rank: "rank3.txt", "rank-3-pid-812.txt", "pyspy_rank_3"
RANK_NAME = re.compile(r"rank[-_]?(\d+)", re.IGNORECASE)
PID_NAME = re.compile(r"pid[-_]?(\d+)", re.IGNORECASE)
#: a rank in a process's command line: "--rank 3", "--rank=3", "RANK=3"
RANK_ARG = re.compile(r"(?:--rank[ =]|\bRANK=)(\d+)")
#: frames that say *that* a process waits, not *what for*: the frame above them is the one shown
#: (a script's ``<module>`` is kept: a script that waits at its top level waits there)
GENERIC = re.compile(
    r"^(?:wait|_wait_for_tstate_lock|join|sleep|select|poll|epoll|_recv|recv|recv_into|acquire|get|"
    r"_worker|run|_bootstrap|_bootstrap_inner|__call__|wrapper|_fn|inner|_run_code|_run_module_as_main)$"
)
#: files whose frames are the waiting machinery itself (threading, selectors, queue, socket, ...)
GENERIC_FILE = re.compile(r"(?:^|/)(?:threading|selectors|queue|socket|subprocess|ssl|asyncio/\w+)\.py$|^<frozen ")
#: at most this many frames are kept per thread (a deep recursion is cut, not stored whole)
MAX_FRAMES = 200


@dataclass(frozen=True)
class Frame:
    function: str
    file: str
    line: int

    def __str__(self) -> str:
        return f"{self.function} ({self.file}:{self.line})"


@dataclass
class Thread:
    ident: str
    state: str
    name: str
    frames: list[Frame] = field(default_factory=list)


@dataclass
class Stack:
    """One process's dump: where it came from, its pid, its rank when known, its threads."""

    source: str
    pid: int | None
    command: str
    rank: int | None
    threads: list[Thread] = field(default_factory=list)
    #: the host it ran on, for a dump validate brought from ``hosts/HOST/stacks/`` ("": the head's own)
    host: str = ""

    @property
    def who(self) -> str:
        on = f" on {self.host}" if self.host else ""
        if self.rank is not None:
            return f"rank {self.rank}" + (f" (pid {self.pid})" if self.pid is not None else "") + on
        return (f"pid {self.pid}" if self.pid is not None else self.source) + on

    def main(self) -> Thread | None:
        """The thread that says what the process does: MainThread, else the first one with frames."""
        named = [t for t in self.threads if t.name == "MainThread" and t.frames]
        return named[0] if named else next((t for t in self.threads if t.frames), None)

    def waiting_at(self) -> Frame | None:
        """The innermost frame of the main thread that is not waiting machinery: what it waits on."""
        main = self.main()
        if main is None:
            return None
        for f in main.frames:
            if not (GENERIC.match(f.function) or GENERIC_FILE.search(f.file)):
                return f
        return main.frames[0]

    def key(self) -> tuple[str, ...]:
        """What makes two processes "in the same place": the functions of the main thread's
        innermost frames from the waiting one on (line numbers differ between versions)."""
        main, at = self.main(), self.waiting_at()
        if main is None or at is None:
            return ()
        i = main.frames.index(at)
        return tuple(f.function for f in main.frames[i : i + 3])


def parse(text: str, source: str) -> list[Stack]:
    """The processes of one dump file (``py-spy dump`` of one pid, or ``ray stack`` of many)."""
    stacks: list[Stack] = []
    name_rank = RANK_NAME.search(source.rsplit("/", 1)[-1])
    name_pid = PID_NAME.search(source.rsplit("/", 1)[-1])
    current: Stack | None = None
    thread: Thread | None = None
    for raw in text.splitlines():
        line = raw.rstrip()
        if m := PROCESS.match(line):
            current = Stack(source, int(m.group(1)), m.group(2)[:200], None)
            stacks.append(current)
            thread = None
        elif m := THREAD.match(line):
            if current is None:  # a dump without its "Process" line (py-spy --nonblocking into a file)
                pid = int(name_pid.group(1)) if name_pid else None
                current = Stack(source, pid, "", None)
                stacks.append(current)
            thread = Thread(m.group(1), m.group(2) or "", m.group(3) or "")
            current.threads.append(thread)
        elif thread is not None and (m := FRAME.match(line)) and len(thread.frames) < MAX_FRAMES:
            thread.frames.append(Frame(m.group(1), m.group(2), int(m.group(3))))
    if name_rank and len(stacks) == 1:
        stacks[0].rank = int(name_rank.group(1))
    for s in stacks:  # a rank in the command ("--rank 3", "RANK=3") when the name has none
        if s.rank is None and (m := RANK_ARG.search(s.command)):
            s.rank = int(m.group(1))
    return [s for s in stacks if s.threads]


def read_dir(folder: Path, limit: int = 1 << 20, host: str = "") -> list[Stack]:
    """Every dump in ``folder`` (its ``*.txt`` and ``*.dump`` files, each read up to ``limit`` bytes);
    ``host``: the host they were taken on, where the folder is one host's."""
    out: list[Stack] = []
    for path in sorted(folder.iterdir()):
        if path.suffix in (".txt", ".dump", ".log") and path.is_file() and not path.is_symlink():
            with path.open("rb") as f:
                text = f.read(limit).decode("utf-8", errors="replace")
            found = parse(text, path.name)
            for s in found:
                s.host = host
            out.extend(found)
    return out


@dataclass(frozen=True)
class Odd:
    """The process whose stack is not where the others' are."""

    stack: Stack
    #: how many processes share the majority's place, and that place
    others: int
    majority: tuple[str, ...]


def odd_one(stacks: list[Stack]) -> Odd | None:
    """The one process (of three or more) in a place no other is, while all others share one place.

    Two or more that differ from the majority are no single culprit: then nothing is named.
    """
    ranked = [s for s in stacks if s.rank is not None]
    if len(ranked) >= 3:  # the ranks are compared with each other, not with the driver or Ray's helpers
        stacks = ranked
    keyed = [(s, s.key()) for s in stacks if s.key()]
    if len(keyed) < 3:
        return None
    counts = Counter(k for _, k in keyed)
    (top, n), *rest = counts.most_common()
    if len(rest) != 1 or rest[0][1] != 1 or n < 2:
        return None
    odd = next(s for s, k in keyed if k == rest[0][0])
    return Odd(odd, n, top)
