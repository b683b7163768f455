"""What capture's steps hand each other: frozen values, so a step's output is its whole effect.

``classify`` turns a :class:`Request` into :class:`Classified` (draft patches, edits left out,
notes); ``stage`` and ``prove`` carry the drafts on; :class:`Report` is what the command returns,
ready for a table or ``to_json()``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence, Set
from dataclasses import asdict, dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from patchctl.capture.base import Found
from patchctl.capture.sources import Tree
from patchctl.tags import tag_regex


@dataclass(frozen=True)
class Captured:
    """One patch of the written patchset, as the report lists it."""

    id: str
    kind: str
    path: str
    #: the fork line it starts at (None for whole files)
    line: int | None
    tagged: bool

    @property
    def where(self) -> str:
        """``FILE:LINE`` in the fork, or ``FILE`` for a whole file."""
        return f"{self.path}:{self.line}" if self.line else self.path


@dataclass(frozen=True)
class LeftOut:
    """An edit capture did not take, with the fork's file and line and what to do about it."""

    path: str
    line: int
    reason: str

    @property
    def where(self) -> str:
        return f"{self.path}:{self.line}"


@dataclass(frozen=True)
class Report:
    """The result of ``patchctl capture``: what was captured, what was left out and why."""

    #: FORK and BASE as the user named them
    fork: str
    base: str
    #: the patchset written; None on a dry run or when nothing was captured
    out: Path | None
    patches: tuple[Captured, ...] = ()
    left_out: tuple[LeftOut, ...] = ()
    #: things a user should know that are not failures (untagged edits not captured, ...)
    notes: tuple[str, ...] = ()
    #: files FORK changed that the written patchset does not re-create (outside the captured scope)
    outside: tuple[str, ...] = ()
    #: ``--base auto``: the commit found and the candidates compared
    found: Found | None = None

    @property
    def ok(self) -> bool:
        """Nothing left out, or a proven patchset written: what was left out is then in the notes,
        and the patchset is the answer (issue 27)."""
        return not self.left_out or self.out is not None

    @property
    def complete(self) -> bool:
        """Whether the patchset re-creates everything FORK changed: then it is byte-identical."""
        return not self.left_out and not self.outside

    def to_json(self) -> dict[str, Any]:
        return {
            "fork": self.fork,
            "base": self.base,
            "out": str(self.out) if self.out else None,
            "patches": [asdict(p) for p in self.patches],
            "left_out": [asdict(x) for x in self.left_out],
            "notes": list(self.notes),
            "outside": list(self.outside),
            **({"base_search": self.found.to_json()} if self.found else {}),
        }


@dataclass(frozen=True)
class Request:
    """What to capture: classify's input."""

    fork: Tree
    base: Tree
    #: the comment tag that marks the fork's edits (``Uky``)
    tag: str
    #: ``--all``: take untagged edits and new files too
    all_: bool = False
    #: ``--include FILE:LINE``: fork edits to take although ambiguous
    include: frozenset[tuple[str, int]] = frozenset()

    @cached_property
    def rx(self) -> re.Pattern[str]:
        return tag_regex({self.tag})

    @property
    def base_label(self) -> str:
        """BASE as the report and the manifest name it: a directory by commit or content, else the
        release when there is one."""
        if self.base.described:
            return self.base.described
        return f"verl {self.base.version}" if self.base.version else self.base.label


@dataclass(frozen=True)
class Draft:
    """A patch as capture drafts it, before the proof: its manifest entry and what it must make of BASE."""

    id: str
    kind: str
    #: the file it edits or adds, relative to the tree
    path: str
    #: the fork line it starts at (None for whole files)
    line: int | None
    tagged: bool
    title: str
    #: the tag's own text; "" writes a TODO in its place
    why: str
    params: dict[str, Any]
    #: the ``upstream`` rule, where capture writes one
    upstream: dict[str, Any] | None = None
    #: add-file, blob: the file's bytes; rename-file: BASE's copy of the old file (its fallback)
    content: bytes | None = None
    #: in-place edits: the (first, last) BASE lines the patch replaces, and the fork's text for them
    part: tuple[tuple[int, int], str] | None = None
    #: in-place edits: BASE's lines of the file, shared by the file's drafts
    base_lines: Sequence[str] = field(default=(), repr=False, compare=False)
    #: ids of the drafts this one needs (:mod:`patchctl.capture.links`, :mod:`patchctl.capture.crossfile`)
    needs: tuple[str, ...] = ()
    #: in-place Python edits: the fork lines its hunks changed, where its new uses of names are read
    fork_lines: frozenset[int] = field(default=frozenset(), repr=False)

    @property
    def shipped_as(self) -> str:
        """Where :attr:`content` is written in the patchset: rename-file's fallback names its own path
        (BASE's old path, which no file the fork has can take)."""
        return str(self.params["fallback"]) if self.kind == "rename-file" else f"files/{self.path}"

    @property
    def captured(self) -> Captured:
        return Captured(self.id, self.kind, self.path, self.line, self.tagged)

    def table(self, fork: str, base: str) -> dict[str, Any]:
        """The ``[[patch]]`` table of the manifest."""
        where = self.captured.where
        doc = {
            "id": self.id,
            "title": self.title + ("" if self.tagged else " (untagged)"),
            "why": self.why or f"TODO: say why this change exists (captured from {where}; the tag carried no text)",
            "kind": self.kind,
            "target": [self.path],
            "origin": f"captured from {fork} ({where})",
            "captured_against": base,
            "params": self.params,
        }
        if self.needs:
            doc["needs"] = list(self.needs)
        if self.upstream is not None:
            doc["upstream"] = self.upstream
        return doc

    def alone(self) -> str | None:
        """The text this patch alone must make of BASE's file (None: no file), the proof's measure for
        one patch; a blob's bytes as the engine carries them (surrogate escapes)."""
        if self.kind == "delete-file":
            return None
        if self.part is None:
            return (self.content or b"").decode("utf-8", "surrogateescape")
        return splice(self.base_lines, [self.part])


@dataclass(frozen=True)
class Classified:
    """What classifying found, for one file or the whole fork, in the order it was found."""

    drafts: tuple[Draft, ...] = ()
    left_out: tuple[LeftOut, ...] = ()
    notes: tuple[str, ...] = ()

    @classmethod
    def join(cls, parts: Iterable[Classified]) -> Classified:
        parts = list(parts)
        return cls(
            tuple(d for p in parts for d in p.drafts),
            tuple(x for p in parts for x in p.left_out),
            tuple(n for p in parts for n in p.notes),
        )

    @property
    def ids(self) -> frozenset[str]:
        return frozenset(d.id for d in self.drafts)


#: the longest id capture makes: ids are table cells at 80 columns, and a file name such as
#: ``run_qwen2_5_vl-3b_fake_dataset_FAST_LOAD.sh`` made ids of 43 characters (issue 39)
MAX_ID = 28


def short_stem(stem: str, limit: int = MAX_ID) -> str:
    """``stem`` as id words, at most ``limit`` characters: the first word (what the file is) and
    as many of the last words (what sets it apart) as fit, the middle dropped, so
    ``run-qwen2-5-vl-3b-fake-dataset-fast-load-env`` reads ``run-dataset-fast-load-env``."""
    words = [w for w in re.sub(r"[^a-z0-9]+", "-", stem.lower()).split("-") if w] or ["patch"]
    if len("-".join(words)) <= limit:
        return "-".join(words)
    head, tail = words[0][:limit], list[str]()
    for word in reversed(words[1:]):
        if len("-".join([head, word, *tail])) > limit:
            break
        tail.insert(0, word)
    return "-".join([head, *tail])


def new_id(stem: str, taken: Set[str]) -> str:
    """A patch id made of ``stem``, at most :data:`MAX_ID` characters with its number, numbered
    past those ``taken``. An id that fits is the stem itself, as before: ids are how recorded
    resolutions and ``--only`` name a patch, so only the long ones change."""
    pid, n = short_stem(stem), 1
    while pid in taken:
        n += 1
        pid = f"{short_stem(stem, MAX_ID - len(str(n)) - 1)}-{n}"
    return pid


def splice(base_lines: Sequence[str], parts: Iterable[tuple[tuple[int, int], str]]) -> str:
    """BASE with each (first, last) line span replaced by a text, spans in file order."""
    out: list[str] = []
    at = 1
    for (first, last), text in sorted(parts, key=lambda part: part[0]):  # stable: two insertions keep their order
        out += base_lines[at - 1 : first - 1]
        out.append(text)
        at = max(last + 1, first)
    out += base_lines[at - 1 :]
    return "".join(out)


def expected(drafts: Iterable[Draft]) -> dict[str, str | None]:
    """File by file, what the drafts must make of BASE: the fork's text less the edits left out
    (None: no file, where the fork deleted or moved one)."""
    by_path: dict[str, list[Draft]] = {}
    out: dict[str, str | None] = {}
    for d in drafts:
        by_path.setdefault(d.path, []).append(d)
        if d.kind == "rename-file":
            out[d.params["source"]] = None
    for rel, mine in by_path.items():
        parts = [d.part for d in mine if d.part is not None]
        out[rel] = splice(mine[0].base_lines, parts) if parts else mine[0].alone()
    return out
