"""Apply the patchsets to every column's pristine tree, each in its own scratch copy, in parallel.

A column is a real apply (plan, then all-or-nothing write) in a directory that is deleted
afterwards; nothing else is written. Workers are processes because the codemods are CPU
bound (libcst parsing); a worker reports a failure as a value, since patchctl's errors carry
constructor arguments that do not survive pickling.
"""

from __future__ import annotations

import dataclasses
import multiprocessing
import os
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from multiprocessing import util
from pathlib import Path
from typing import Any

from patchctl import orphans, proc, progress
from patchctl.errors import PatchctlError
from patchctl.matrix.columns import Source, fetch, unpack
from patchctl.patchsets import engine, loads
from patchctl.patchsets.engine import PatchResult
from patchctl.patchsets.history.carry import History
from patchctl.patchsets.model import Outcome, Patchset
from patchctl.target import open_tree


class ColumnFailed(PatchctlError):
    """Applying to one version stopped with an error (e.g. a file that is not valid Python)."""

    def __init__(self, label: str, message: str) -> None:
        self.label = label
        super().__init__(f"matrix column {label}: {message}")


@dataclass(frozen=True)
class Column:
    source: Source
    #: verl's version as the unpacked tree declares it (verl/version/version)
    version: str | None
    #: one result per patch, in manifest order
    results: tuple[PatchResult, ...]
    #: files the apply wrote in the scratch copy; none when a patch failed (all-or-nothing)
    written: tuple[str, ...]


@dataclass(frozen=True)
class Matrix:
    patchsets: tuple[str, ...]
    #: (patchset, patch id) of every row, in manifest order
    rows: tuple[tuple[str, str], ...]
    columns: tuple[Column, ...]

    def name(self, row: tuple[str, str]) -> str:
        """The patch id; ``patchset/id`` where two loaded patchsets use the same id."""
        clash = sum(1 for _ps, pid in self.rows if pid == row[1]) > 1
        return f"{row[0]}/{row[1]}" if clash else row[1]

    def cell(self, row: tuple[str, str], column: Column) -> PatchResult:
        return next(r for r in column.results if (r.patchset, r.patch) == row)

    def first_superseded(self, row: tuple[str, str]) -> str | None:
        """The first column, in the order given, where upstream has the change itself."""
        return next(
            (c.source.label for c in self.columns if self.cell(row, c).status is Outcome.SUPERSEDED_UPSTREAM), None
        )

    def problems(self, row: tuple[str, str]) -> list[str]:
        """The columns where the patch ends in conflict or ambiguous."""
        return [
            c.source.label for c in self.columns if isinstance(s := self.cell(row, c).status, Outcome) and s.is_failure
        ]

    @property
    def ok(self) -> bool:
        return not any(self.problems(row) for row in self.rows)

    def to_json(self) -> dict[str, Any]:
        """The --json document; its keys are stable."""
        return {
            "patchsets": list(self.patchsets),
            "versions": [
                {
                    "label": c.source.label,
                    "kind": c.source.kind,
                    "version": c.version,
                    "commit": c.source.commit,
                    "written": len(c.written),
                }
                for c in self.columns
            ],
            "patches": [{"name": self.name(row), "patchset": row[0], "patch": row[1]} for row in self.rows],
            "cells": [
                {
                    "patch": self.name(row),
                    "version": c.source.label,
                    **{k: v for k, v in self.cell(row, c).to_json().items() if k not in ("patchset", "patch")},
                }
                for row in self.rows
                for c in self.columns
            ],
            "first_superseded": {self.name(row): self.first_superseded(row) for row in self.rows},
            "problems": {self.name(row): self.problems(row) for row in self.rows},
            "ok": self.ok,
        }


@dataclass(frozen=True)
class _Job:
    source: Source
    scratch: Path
    patchsets: tuple[Patchset, ...]
    #: ``--repo``: the clone whose history carries the patches that do not fit (None: no walk)
    history: Path | None = None


@dataclass(frozen=True)
class _Failed:
    label: str
    message: str


def run_matrix(
    columns: list[Source], patchsets: list[Patchset], jobs: int | None = None, history: Path | None = None
) -> Matrix:
    """Apply ``patchsets`` to a pristine copy of each source; at most ``jobs`` at once. With
    ``history`` (a verl clone) the patches that do not fit are carried along its commits."""
    fetch(columns)
    # owned: the next matrix removes what a killed one left; its workers die with it (proc)
    with orphans.scratch("patchctl-matrix-") as tmp:
        work = [_Job(s, Path(tmp) / str(i), tuple(patchsets), history) for i, s in enumerate(columns)]
        workers = min(len(work), jobs or _cpus())
        with progress.step("matrix: applying to each version", total=len(work)) as shown:
            if workers <= 1:
                try:
                    done = [_done(out, shown) for out in map(_apply_in_scratch, work)]
                finally:
                    _close_histories()
            else:
                proc.ready_to_fork()  # the workers' die_with_parent uses what the parent looked up
                _warm()
                # each worker takes a run of neighbouring versions: its walker's caches (the base
                # plans, the blocks of upstream's commits merged) serve the next version, which
                # walks mostly the same commits; one version apiece has every worker redo them
                share = -(-len(work) // workers)
                with ProcessPoolExecutor(max_workers=workers, initializer=proc.die_with_parent) as pool:
                    done = [_done(out, shown) for out in pool.map(_apply_in_scratch, work, chunksize=share)]
    for out in done:
        if isinstance(out, _Failed):
            raise ColumnFailed(out.label, out.message)
    rows = tuple((ps.name, p.id) for ps in patchsets for p in ps.patches)
    return Matrix(tuple(ps.name for ps in patchsets), rows, tuple(c for c in done if isinstance(c, Column)))


def _done(out: Column | _Failed, shown: progress.Step) -> Column | _Failed:
    shown.advance(f"matrix: versions done (last {out.source.label if isinstance(out, Column) else out.label})")
    return out


#: one walker per repository and process: a worker's later columns reuse its caches (base plans,
#: blobs, merges), since every column walks from the same bases
_HISTORIES: dict[Path, History] = {}


def _history(repo: Path) -> History:
    if repo not in _HISTORIES:
        if not _HISTORIES and multiprocessing.parent_process() is not None:
            # a pool's worker: its walker's processes (git cat-file, the helper of its git
            # commands) are ended and waited for when the worker ends, not left to the
            # parent-death signal (their CPU then counts for this matrix, as the walk's work)
            util.Finalize(None, _close_histories, exitpriority=10)
        _HISTORIES[repo] = History(repo, strict=False)
    return _HISTORIES[repo]


def _close_histories() -> None:
    for h in _HISTORIES.values():
        h.close()
    _HISTORIES.clear()


#: a tiny text of each type the load check reads (:func:`patchctl.patchsets.loads.loads`)
_WARM = {"a.py": "x = 1\n", "a.yaml": "a: 1\n", "a.toml": "a = 1\n", "a.json": "{}\n", "requirements.txt": "x\n"}


def _warm() -> None:
    """Run each file type's load check once before the workers fork: each loader imports its
    parser (PyYAML, packaging, tomllib) when first used, and a worker forked after that has it
    already; otherwise every worker imports them again (issue 38 req 8)."""
    for path, text in _WARM.items():
        loads.loads(path, text)


def _cpus() -> int:
    """CPUs this process may run on (a container's limit, not the host's count)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - macOS, Windows
        return os.cpu_count() or 1


def _apply_in_scratch(job: _Job) -> Column | _Failed:
    """Unpack, plan, write: what ``patchctl apply`` does, on a copy nobody else sees."""
    root: Path | None = None
    try:
        root = unpack(job.source, job.scratch)
        tree = dataclasses.replace(open_tree(root, job.source.label), commit=job.source.commit)
        planner = _history(job.history).plan if job.history is not None else engine.plan_apply
        plan = planner(tree, list(job.patchsets), None)
        written = engine.execute(plan).paths if plan.ok else []
        return Column(job.source, tree.version, tuple(plan.results), tuple(written))
    except PatchctlError as exc:
        message = str(exc)
        if root is not None:  # the scratch path is gone by the time anyone reads this
            message = message.replace(f"{root.resolve()}/", "").replace(f"{root}/", "")
        return _Failed(job.source.label, message)
