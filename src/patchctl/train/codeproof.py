"""What the code hook recorded, as values: the watched patches, the processes, the proof.

Apart from ``codehook`` (which sets the hook up, reads its records and judges them) because the
plan and the judgement of a run carry these values (``train/model.py``), and its ``--json`` report
shows them: a reader of those needs the types, not the hook's set-up.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Watch:
    """One code patch of the tree and the module it edits."""

    patchset: str
    patch: str
    module: str
    path: str

    @property
    def package(self) -> str:
        """The package whose import means the run took this patch's code path (its parent)."""
        return self.module.rsplit(".", 1)[0] if "." in self.module else self.module


@dataclass(frozen=True)
class Process:
    pid: int
    #: "driver", a Ray actor's title ("ray::TaskRunner"), vLLM's ("VLLM::Worker"), else "python"
    role: str
    #: module -> the file it was executed from
    imports: dict[str, str]
    #: module -> the sha256 of that file as the process executed it (absent: not recorded)
    digests: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Proof:
    """What the hook recorded, against the tree under validation."""

    tree: str
    watches: tuple[Watch, ...]
    processes: tuple[Process, ...]

    def on_path(self, w: Watch) -> bool:
        """Did the run take the patch's code path (some process imported its package or module)?"""
        return any(w.module in p.imports or w.package in p.imports for p in self.processes)

    def elsewhere(self) -> list[tuple[Process, str, str]]:
        """(process, module, file) for every watched import from outside the tree."""
        return [(p, m, f) for p in self.processes for m, f in sorted(p.imports.items()) if not _inside(f, self.tree)]

    def to_json(self) -> dict[str, Any]:
        def procs(w: Watch, inside: bool) -> list[dict[str, Any]]:
            return [
                {"pid": p.pid, "role": p.role, **({} if inside else {"file": p.imports[w.module]})}
                for p in self.processes
                if w.module in p.imports and _inside(p.imports[w.module], self.tree) == inside
            ]

        return {
            "tree": self.tree,
            "processes": len(self.processes),
            "verl_from": sorted({p.imports["verl"] for p in self.processes if "verl" in p.imports}),
            "patches": [
                {
                    "patchset": w.patchset,
                    "patch": w.patch,
                    "module": w.module,
                    "file": w.path,
                    "on_path": self.on_path(w),
                    "from_tree": procs(w, True),
                    "from_elsewhere": procs(w, False),
                }
                for w in self.watches
            ],
        }


def _inside(file: str, tree: str) -> bool:
    try:
        return os.path.commonpath([os.path.realpath(file), tree]) == tree
    except ValueError:
        return False
