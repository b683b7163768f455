"""Anchor sizes of captured structural patches: minimal (block-nested) beside the baseline
(widened to whole statements of the enclosing class or function body), on real verl files.

For each file of verl 0.6.1 below, a tagged line is inserted after every Nth simple statement
inside a function (at whatever depth: loops, branches, ``with`` blocks), and capture's own
machinery drafts the patch for that one-line fork twice: as before issue 27 (the baseline,
``pyunits.place``) and with minimal anchors (``nested.place_narrowest``). Per file it prints:

- placed: insertions capture could anchor at one place;
- size: lines the patch must find as they were (its ``before`` text plus its anchor and block
  header lines), median / 90th percentile / max;
- survives: of the insertions where an upstream edit lands inside the baseline's text but
  outside the minimal one (a name renamed in another statement of the same loop or branch),
  how many still apply with the line where the fork has it (the baseline's text no longer
  matches, so it conflicts).

    python benchmarks/bench_anchors.py [--every N]
"""

from __future__ import annotations

import argparse
import ast
import io
import keyword
import statistics
import sys
import tokenize
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from patchctl import releases
from patchctl.capture import nested, pyunits
from patchctl.capture.hunks import diff
from patchctl.patchsets.kinds import KINDS
from patchctl.patchsets.kinds.base import Context, EditStatus
from patchctl.patchsets.model import Patch
from patchctl.patchsets.placement.pyparse import split_lines
from patchctl.tags import tag_regex

FILES = [
    "verl/trainer/ppo/ray_trainer.py",
    "verl/workers/actor/dp_actor.py",
    "verl/trainer/ppo/core_algos.py",
    "verl/utils/tracking.py",
]
KIND = KINDS["structural"]


def points(tree: ast.Module, every: int) -> list[int]:
    found = sorted(
        {
            n.end_lineno
            for fn in ast.walk(tree)
            if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef))
            for n in ast.walk(fn)
            if isinstance(n, ast.stmt) and not hasattr(n, "body") and n.end_lineno
        }
    )
    return found[::every]


def insert_after(lines: list[str], tree: ast.Module, line: int) -> str:
    stmt = next(
        s for s in ast.walk(tree) if isinstance(s, ast.stmt) and s.end_lineno == line and not hasattr(s, "body")
    )
    first = lines[stmt.lineno - 1]
    return "".join([*lines[:line], first[: len(first) - len(first.lstrip())] + "uky_probe = 1  # Uky\n", *lines[line:]])


def draft(base: str, fork: str, narrowest: bool) -> tuple[dict[str, Any], tuple[int, int]] | None:
    blines, flines = split_lines(base), split_lines(fork)
    units = pyunits.merge(
        [pyunits.find_unit(ast.parse(fork), flines, h) for h in diff(blines, flines, tag_regex({"Uky"}))], flines
    )
    how = nested.place_narrowest if narrowest else pyunits.place
    if len(units) != 1 or how(units[0], flines, ast.parse(base), blines, set(), False) is not None:
        return None
    return units[0].params, units[0].base_span


def size(params: dict[str, Any]) -> int:
    return (
        len(split_lines(str(params["before"])))
        + len(params.get("above", []))
        + len(params.get("below", []))
        + len(params.get("blocks", []))
    )


def upstream_edit(text: str, tree: ast.Module, wide: tuple[int, int], narrow: tuple[int, int]) -> str | None:
    """``text`` with a name renamed in a statement inside ``wide`` but away from ``narrow``."""
    lines = split_lines(text)
    for s in ast.walk(tree):
        if not isinstance(s, ast.stmt) or hasattr(s, "body") or not wide[0] <= s.lineno <= wide[1]:
            continue
        if narrow[0] - 3 <= s.lineno <= narrow[1] + 3 or (s.end_lineno or 0) >= narrow[0] - 3 >= s.lineno:
            continue
        toks = tokenize.generate_tokens(io.StringIO(lines[s.lineno - 1].lstrip()).readline)
        try:
            name = next(
                (t for t in toks if t.type == tokenize.NAME and not keyword.iskeyword(t.string) and t.string != "self"),
                None,
            )
        except (tokenize.TokenError, SyntaxError):
            continue
        if name is not None:
            line = lines[s.lineno - 1]
            edited = "".join(
                [*lines[: s.lineno - 1], line.replace(name.string, f"renamed_{name.string}", 1), *lines[s.lineno :]]
            )
            try:
                ast.parse(edited)
            except SyntaxError:
                continue
            return edited
    return None


def applies(text: str, params: dict[str, Any], want: str) -> bool:
    """Whether the patch applies to ``text`` and puts its line where the fork has it (``want``)."""
    p = KIND.parse_params(params, Path("."), Path("patchset.toml"), "p")
    edit = KIND.apply(text, Patch("p", "t", "w", "Uky", "structural", ("m.py",), p), Context(Path("."), "m.py"))
    return edit.status is EditStatus.CHANGED and edit.text == want


def stats(values: list[int]) -> str:
    if not values:
        return "-"
    ordered = sorted(values)
    return f"{statistics.median(ordered):g} / {ordered[int(0.9 * (len(ordered) - 1))]} / {ordered[-1]}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--every", type=int, default=5, help="insert after every Nth simple statement")
    args = ap.parse_args()
    root = releases.materialize("0.6.1")
    head = (
        f"{'file':<34} {'points':>6}  {'placed (base/min)':>17}  {'size base: med/p90/max':>23}  "
        f"{'size minimal':>15}  {'survives an edit nearby':>24}"
    )
    print(head)
    print("-" * len(head))
    for rel in FILES:
        text = (root / rel).read_text(encoding="utf-8")
        lines, tree = split_lines(text), ast.parse(text)
        wide_sizes, narrow_sizes, placed, tried, kept = [], [], [0, 0], 0, [0, 0]
        spots = points(tree, args.every)
        for line in spots:
            fork = insert_after(lines, tree, line)
            wide, narrow = draft(text, fork, False), draft(text, fork, True)
            placed[0] += wide is not None
            placed[1] += narrow is not None
            if wide is None or narrow is None:
                continue
            wide_sizes.append(size(wide[0]))
            narrow_sizes.append(size(narrow[0]))
            edited = upstream_edit(text, tree, wide[1], narrow[1])
            if edited is not None:
                tried += 1
                want = insert_after(split_lines(edited), ast.parse(edited), line)
                kept[0] += applies(edited, wide[0], want)
                kept[1] += applies(edited, narrow[0], want)
        print(
            f"{rel:<34} {len(spots):>6}  {placed[0]:>8}/{placed[1]:<8}  {stats(wide_sizes):>23}  "
            f"{stats(narrow_sizes):>15}  {f'base {kept[0]}, minimal {kept[1]} of {tried}':>24}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
