"""How often planning one patchset looks up where its structural edits go (issue 38 requirement 9).

A counting trace (``sys.setprofile``) over one in-process ``plan_apply`` of a patchset on a tree:
per structural patch planned (every round of the planner counted), the calls of the placement
functions and the visits into each placement module from outside it, then the CPU seconds of the
plan without the trace. It reads the placement modules by file name (``placement/`` or their old
home ``kinds/``), so the same script measures a checkout from before the move.

    python benchmarks/bench_placement.py --patchset DIR [--tree PATH | --version 0.6.1]

The fork patchsets ``bench_forks.py`` captures (``~/.cache/patchctl-bench/forks/NAME/patchset``)
have dozens of structural patches; the built-in ``uky`` has none.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from types import FrameType
from typing import Any

from patchctl import releases
from patchctl.patchsets import plan as planmod
from patchctl.patchsets.loader import load_patchset
from patchctl.patchsets.model import Patch, Patchset
from patchctl.patchsets.plan import plan_apply
from patchctl.target import open_tree

MODULES = ("where", "places", "anchors", "candidate", "explain", "gaptext", "pyparse", "syntax")
FUNCTIONS = (
    "where.locate",
    "places.find",
    "anchors.parsed",
    "pyparse.parse_ast",
    "anchors.candidates",
    "anchors.find_scopes",
    "syntax.header_dump",
    "candidate.propose",
    "candidate.best",
    "explain.anchors",
)


def module(filename: str) -> str | None:
    path = Path(filename)
    home = path.parent.name
    return path.stem if path.stem in MODULES and home in ("placement", "kinds") else None


def trace(ps: Patchset, tree: Path) -> tuple[int, Counter[str], Counter[str], float, int]:
    """Structural patches planned, calls of :data:`FUNCTIONS` (a memoised function's only when it
    computes), visits per module, the plan's CPU s, and how often ``locate`` was asked (0 before it was)."""
    calls: Counter[str] = Counter()
    visits: Counter[str] = Counter()
    planned = 0

    def profile(frame: FrameType, event: str, arg: Any) -> None:
        if event != "call":
            return
        mod = module(frame.f_code.co_filename)
        if mod is None:
            return
        calls[f"{mod}.{frame.f_code.co_name}"] += 1
        if frame.f_back is None or module(frame.f_back.f_code.co_filename) != mod:
            visits[mod] += 1

    original = planmod._apply_one

    def counted(ps: Patchset, patch: Patch, *rest: Any) -> Any:
        nonlocal planned
        if patch.kind != "structural":
            return original(ps, patch, *rest)
        planned += 1
        sys.setprofile(profile)
        try:
            return original(ps, patch, *rest)
        finally:
            sys.setprofile(None)

    where = sys.modules.get("patchctl.patchsets.placement.where")
    before = _asked(where)
    planmod._apply_one = counted  # type: ignore[assignment] # the same signature, counted
    try:
        plan_apply(open_tree(tree, "traced"), [ps])
    finally:
        planmod._apply_one = original
    where = sys.modules.get("patchctl.patchsets.placement.where")
    asked = _asked(where) - before
    for name, mod in list(sys.modules.items()):  # what the traced run remembered would flatter the timed one
        if module(getattr(mod, "__file__", None) or "") is not None and name.startswith("patchctl."):
            for obj in vars(mod).values():
                if callable(getattr(obj, "cache_clear", None)):
                    obj.cache_clear()
    start = time.process_time()
    plan_apply(open_tree(tree, "timed"), [ps])
    return planned, calls, visits, time.process_time() - start, asked


def _asked(where: Any) -> int:
    info = where.locate.cache_info() if where is not None else None
    return info.hits + info.misses if info is not None else 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--patchset", type=Path, required=True)
    ap.add_argument("--tree", type=Path, help="a verl tree (default: the release --version)")
    ap.add_argument("--version", default="0.6.1")
    args = ap.parse_args()
    ps = load_patchset(args.patchset)
    with tempfile.TemporaryDirectory() as tmp:
        tree = Path(tmp) / "tree"
        shutil.copytree(args.tree or releases.materialize(args.version), tree, symlinks=True)
        planned, calls, visits, cpu, asked = trace(ps, tree)
    print(f"{args.patchset} on {args.tree or 'verl ' + args.version}: {planned} structural patches planned")
    if not planned:
        return 0
    print("\n| placement function | calls per structural patch |\n|---|---|")
    for name in FUNCTIONS:
        if calls[name]:
            print(f"| {name} | {calls[name] / planned:.1f} |")
    if asked:
        print(f"| where.locate asked (memoised answers included) | {asked / planned:.1f} |")
    print("\n| module | visits from outside it, per structural patch |\n|---|---|")
    for mod in MODULES:
        if visits[mod]:
            print(f"| {mod} | {visits[mod] / planned:.1f} |")
    print(f"\nplan_apply: {cpu:.2f} s CPU (in process, after one traced run)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
