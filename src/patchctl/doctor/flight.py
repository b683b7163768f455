"""PyTorch's NCCL flight recorder dumps: which rank the others waited for.

With ``TORCH_NCCL_TRACE_BUFFER_SIZE=N`` each rank keeps its last N collectives, and on a watchdog
timeout (``TORCH_NCCL_DUMP_ON_TIMEOUT=1``) or a write to ``TORCH_NCCL_DEBUG_INFO_PIPE_FILE`` each
writes them to ``TORCH_NCCL_DEBUG_INFO_TEMP_FILE`` + rank: a dict with ``entries`` (per collective:
``collective_seq_id``, ``profiling_name`` such as ``nccl:all_reduce``, ``state`` scheduled, started
or completed, ``frames``) and ``pg_status`` (per process group: the last enqueued, started and
completed collective). The rank whose last collective is behind the others' is the one they wait
for; a rank ahead with its collective not completed is one that waits.

The dump is a pickle (or JSON when written through the JSON variant). A pickle from another
machine can run any code when loaded with ``pickle.load``; :func:`load` reads it with an Unpickler
that builds only dicts, lists, tuples, strings, numbers, booleans and None, plus the two list
builders torch's C++ pickler names (``torch.jit._pickle.build_intlist`` and friends), mapped to
``list``. Any other global, a tensor, a reduce of anything, is refused without being called.
"""

from __future__ import annotations

import io
import json
import pickle
import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

#: the default dump prefix is /tmp/nccl_trace_rank_ ; the run's own is set by patchctl train
RANK_FILE = re.compile(r"(?<!\d)(\d+)$")  # starts only where a run of digits starts: linear
#: a dump larger than this is no flight recorder dump (the default buffer of 2000 entries with frames is
#: a few MB)
MAX_BYTES = 64 << 20


def _as_list(*args: Any) -> list[Any]:
    return list(args[0]) if args else []


def _keep_value(value: Any, *_type: Any) -> Any:
    return value


#: the only globals a flight recorder pickle may name, each mapped to a harmless builder
ALLOWED: dict[tuple[str, str], Callable[..., Any]] = {
    ("torch.jit._pickle", "build_intlist"): _as_list,
    ("torch.jit._pickle", "build_doublelist"): _as_list,
    ("torch.jit._pickle", "build_boollist"): _as_list,
    ("torch.jit._pickle", "restore_type_tag"): _keep_value,
    ("builtins", "set"): set,
    ("builtins", "frozenset"): frozenset,
}


class NotADump(Exception):
    """The file is no flight recorder dump, or it names code to run; the message says which."""


class _Restricted(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        try:
            return ALLOWED[(module, name)]
        except KeyError:
            raise pickle.UnpicklingError(f"it names {module}.{name}, which a flight recorder dump never does") from None

    def persistent_load(self, pid: Any) -> Any:
        raise pickle.UnpicklingError("it refers to persistent objects (tensors), which a dump holds none of")


def load(path: Path) -> dict[str, Any]:
    """The dump at ``path`` as plain data; :class:`NotADump` when it is none (or would run code)."""
    with path.open("rb") as f:
        raw = f.read(MAX_BYTES + 1)
    if len(raw) > MAX_BYTES:
        raise NotADump(f"larger than {MAX_BYTES >> 20} MB")
    if raw.lstrip()[:1] == b"{":
        try:
            doc = json.loads(raw)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise NotADump(f"not JSON ({exc})") from None
    else:
        try:
            doc = _Restricted(io.BytesIO(raw)).load()
        except (pickle.UnpicklingError, EOFError, ValueError, TypeError, IndexError, KeyError, AttributeError) as exc:
            raise NotADump(f"not a flight recorder pickle: {exc}") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("entries", []), list):
        raise NotADump("has no 'entries' list")
    return doc


@dataclass(frozen=True)
class RankState:
    rank: int
    source: str
    #: the last collective this rank enqueued (its sequence number in the process group), -1 if none
    last_seq: int
    #: that collective's name ("nccl:all_reduce") and state (scheduled, started, completed)
    op: str
    state: str
    #: the innermost Python frame of that collective, "all_reduce at torch/distributed/...:2050"
    where: str
    #: the last collective it completed, -1 if none
    completed: int
    #: the host whose folder the dump came from (``hosts/HOST/nccl_trace``); "" for the head's own
    host: str = ""

    @property
    def who(self) -> str:
        """The rank and its host ("rank 1 on node2"); just the rank for a dump of the head's own folder."""
        return f"rank {self.rank}" + (f" on {self.host}" if self.host else "")


def _int(v: Any, default: int = -1) -> int:
    return v if isinstance(v, int) and not isinstance(v, bool) else default


def rank_state(doc: dict[str, Any], rank: int, source: str) -> RankState:
    """The rank's last collective of the default group (pg 0, or the first group its entries name)."""
    entries = [e for e in doc.get("entries", []) if isinstance(e, dict) and not e.get("is_p2p")]
    pgs = [e.get("pg_id") for e in entries]
    pg = 0 if 0 in pgs else (pgs[0] if pgs else 0)
    mine = [e for e in entries if e.get("pg_id") == pg]
    last = max(mine, key=lambda e: _int(e.get("collective_seq_id")), default=None)
    done = [_int(e.get("collective_seq_id")) for e in mine if e.get("state") == "completed"]
    status = doc.get("pg_status", {})
    status = status.get(str(pg), status.get(pg, {})) if isinstance(status, dict) else {}
    completed = max(done, default=_int(status.get("last_completed_collective")) if isinstance(status, dict) else -1)
    where = ""
    if last is not None and isinstance(frames := last.get("frames"), list):
        for fr in frames:
            if isinstance(fr, dict) and "c10d" not in str(fr.get("filename", "")):
                where = f"{fr.get('name')} at {fr.get('filename')}:{fr.get('line')}"
                break
    return RankState(
        rank,
        source,
        _int(last.get("collective_seq_id")) if last else -1,
        str(last.get("profiling_name", "")) if last else "",
        str(last.get("state", "")) if last else "",
        where,
        completed,
    )


@dataclass(frozen=True)
class Verdict:
    ranks: tuple[RankState, ...]
    #: the ranks the others wait for (their last collective is behind), empty when all are level
    behind: tuple[int, ...]
    #: what the rest wait in: "collective #42 nccl:all_reduce (scheduled)"
    waiting: str
    #: dumps that could not be read: (file, why)
    unreadable: tuple[tuple[str, str], ...]


def read_dir(folder: Path) -> Verdict | None:
    """Every rank's dump in ``folder`` (files ending in the rank number), and who is behind."""
    return read_dirs([(folder, "")])


def read_dirs(folders: list[tuple[Path, str]]) -> Verdict | None:
    """Every rank's dump in each (folder, host): a multi-host run's ranks write on their own host, and
    validate brings each host's into ``hosts/HOST/nccl_trace``. A rank found in two folders (the head's
    own and its host's copy, or a shared disk) is read from the first; put the host folders first so
    that it is named with its host."""
    states: list[RankState] = []
    bad: list[tuple[str, str]] = []
    seen: set[int] = set()
    for folder, host in folders:
        if not folder.is_dir() or folder.is_symlink():
            continue
        for path in sorted(folder.iterdir()):
            m = RANK_FILE.search(path.name)
            if not m or not path.is_file() or path.is_symlink() or path.suffix == ".pipe":
                continue
            rank = int(m.group(1))
            if rank in seen:
                continue
            source = f"{host}:{path.name}" if host else path.name
            try:
                doc = load(path)
            except (NotADump, OSError) as exc:
                bad.append((source, str(exc)))
                continue
            seen.add(rank)
            states.append(replace(rank_state(doc, rank, source), host=host))
    if not states and not bad:
        return None
    states.sort(key=lambda s: s.rank)
    top = max((s.last_seq for s in states), default=-1)
    behind = tuple(s.rank for s in states if s.last_seq < top)
    ahead = [s for s in states if s.last_seq == top]
    waiting = f"collective #{top} {ahead[0].op} ({ahead[0].state})" if ahead and top >= 0 else ""
    return Verdict(tuple(states), behind, waiting, tuple(bad))
