"""Real verl forks carried across verl releases: patchctl beside ``git apply -3`` (issue 27).

For each fork (TinyZero, Search-R1, Skywork-OR1; bare mirrors as the search tool's ``fetch``
leaves them) it finds the verl base (``forks_setup.find_base``), captures the fork with
``capture --all`` and, on each verl version, plans the patchset on a pristine tree beside
``git apply -3`` of the fork's diff. The unit on both sides is the captured patch: git has
placed an edit when the patch's own check finds it in git's result (conflict regions read as
upstream's side, so git's clean hunks in a conflicted file still count), and patchctl when it
finds it in the planned tree: a change upstream made too (or a file already gone) counts for both.

Per version it prints the edits placed by each, those only one placed, patchctl's conflicts
(each with its reason in the detail file, and counted by the kind of reason: the anchor is gone,
the code at the place differs, the anchors are out of order, other), ``fmt``: conflicts in a
scope whose syntax tree is the same on the base and the version (caused by formatting alone),
``marked``: conflicts ``apply --conflicts=markers`` finds a place for (``unmarked, why``: the
others, by the reason it gives), git's hunks merged clean
and with conflict markers, and the times. ``git, partners kept`` counts git's placements whose
``needs`` git placed too (a use whose import git left in conflict is broken code, which patchctl
holds back). Per fork: capture's patches by kind, what it left out, and the structural anchor
sizes (lines a patch must find: before + anchors + block headers).

    python benchmarks/bench_forks.py [--forks TinyZero,...] [--versions v0.2.0.post2,...] [--spot 20]
"""

from __future__ import annotations

import argparse
import random
import shutil
import statistics
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import forks_setup as fs
from forks_measure import anchor_sizes, present, reason_class, same_scope, spot
from patchctl.capture.run import capture
from patchctl.patchsets import conflicts as conflicts_mod
from patchctl.patchsets.engine import plan_apply
from patchctl.patchsets.loader import load_patchset
from patchctl.patchsets.model import Outcome, Patch, PatchResult, Patchset
from patchctl.patchsets.needs import IN_TREE
from patchctl.target import open_tree

FORKS = {
    "TinyZero": "Jiayi-Pan+TinyZero",
    "Search-R1": "PeterGriffinJin+Search-R1",
    "Skywork-OR1": "SkyworkAI+Skywork-OR1",
}
VERSIONS = "v0.2.0.post2,v0.3.0.post1,v0.4.1,v0.5.0,v0.6.1,v0.7.0,0.9.1"


def one_version(
    name: str, ps: Patchset, base: Path, label: str, vtree: Path, gd: Path, work: Path, log: list[str], spots: list[str]
) -> dict[str, object]:
    t0 = time.perf_counter()
    plan = plan_apply(open_tree(vtree, label), [ps])
    t_pc = time.perf_counter() - t0
    t0 = time.perf_counter()
    texts, clean, marked = fs.git_three_way(gd, vtree, work / "git-out" / label)
    t_git = time.perf_counter() - t0
    by_id = {p.id: p for p in ps.patches}
    mine, gits, fmt = set(), set(), 0
    conflicts: Counter[str] = Counter()
    why: Counter[str] = Counter()
    for r in plan.results:
        p = by_id[r.patch]
        rel = p.target[0]
        text = texts[rel] if rel in texts else fs.read(vtree / rel)
        if present(p, ps, text)[0]:  # the same measure on both sides: the change is in the result
            gits.add(p.id)
        if present(p, ps, plan.after[rel] if rel in plan.after else fs.read(vtree / rel))[0]:
            mine.add(p.id)
            if label != "base" and r.status is Outcome.APPLIED and p.kind == "structural":
                spots += spot(name, label, p, ps, plan.after.get(rel))
        if r.status.is_failure or r.status is Outcome.HELD_BACK or r.status is Outcome.NOT_APPLICABLE:
            conflicts[r.status.value] += 1
            fmt += r.status.is_failure and same_scope(p, base, vtree)
            why[reason_class(r.reason)] += r.status.is_failure
            log.append(f"{name} {label} {r.status.value} {p.id} {rel}: {' '.join(r.reason.split())[:300]}")
    for pid in sorted(gits - mine):
        log.append(f"{name} {label} only-git {pid} {by_id[pid].target[0]}")
    kept = {pid for pid in gits if all(d in gits for d in by_id[pid].needs)}  # git's, partners there too
    conflicts_mod.mark(plan, [ps])
    unmarked: Counter[str] = Counter()
    for r in plan.results:
        if r.status.is_failure:  # a conflict apply --conflicts=markers could not mark: its reason
            unmarked[unmarked_class(r)] += 1
            log.append(f"{name} {label} unmarked {r.patch} {r.path}: {' '.join(r.reason.split()[-40:])}")
    return {
        "version": label,
        "patches": len(plan.results),
        "patchctl": len(mine),
        "git": len(gits),
        "git, partners kept": len(kept),
        "only patchctl": len(mine - gits),
        "only git": len(gits - mine),
        "conflict": conflicts["conflict"] + conflicts["ambiguous"],
        "why (anchor/code/order/other)": "/".join(str(why[k]) for k in ("anchor", "code", "order", "other")),
        "fmt": fmt,
        "marked": sum(r.status is Outcome.CONFLICT_MARKED for r in plan.results),
        "unmarked, why": ", ".join(f"{n} {k}" for k, n in sorted(unmarked.items())) or "-",
        "n/a": conflicts["not-applicable"],
        "held": conflicts["held-back"],
        "held, cross-file": held_across(plan.results, by_id),
        "git hunks clean/marked": f"{clean}/{marked}",
        "patchctl s": f"{t_pc:.1f}",
        "git s": f"{t_git:.1f}",
    }


def unmarked_class(r: PatchResult) -> str:
    """Why a conflict got no markers, in a word: ``ambiguous`` (several places fit), ``no-alike``
    (no statement reads like its anchors), ``overlap`` (another conflict's place), ``rewritten``
    (none of a hunk's lines is left), ``binary``,
    ``by-syntax`` (a kind that keeps no text), ``other``."""
    if r.status is Outcome.AMBIGUOUS:
        return "ambiguous"
    why = r.reason.rsplit("no conflict markers: ", 1)[-1]
    for key, word in (
        ("reads at least", "no-alike"),
        ("overlaps or touches", "overlap"),
        ("none of the hunk's lines", "rewritten"),
        ("binary", "binary"),
        ("by syntax", "by-syntax"),
    ):
        if key in why:
            return word
    return "other"


def held_across(results: list[PatchResult], by_id: dict[str, Patch]) -> int:
    """Patches held back because a partner in another file did not apply (issue 27.5's cross-file links)."""
    status = {r.patch: r.status for r in results}
    return sum(
        r.status is Outcome.HELD_BACK
        and any(
            by_id[d].target[0] != by_id[r.patch].target[0] and status.get(d) not in IN_TREE
            for d in by_id[r.patch].needs
        )
        for r in results
    )


def cross_links(name: str, ps: Patchset) -> list[str]:
    """Every cross-file link capture made, with both ends' text, for reading (the link spot check)."""
    by_id = {p.id: p for p in ps.patches}

    def text(p: Patch) -> str:
        raw = getattr(p.params, "after", None) or getattr(p.params, "now", None) or f"(whole file {p.target[0]})"
        return " | ".join(ln.strip() for ln in str(raw).splitlines() if ln.strip())[:240]

    return [
        f"{name} link {p.id} ({p.target[0]}, {p.kind}) -> {d.id} ({d.target[0]}, {d.kind})\n"
        f"    uses: {text(p)}\n    from: {text(d)}"
        for p in ps.patches
        for d in (by_id[n] for n in p.needs)
        if d.target[0] != p.target[0]
    ]


def table(rows: list[dict[str, object]]) -> str:
    keys = list(rows[0])
    widths = [max(len(k), *(len(str(r[k])) for r in rows)) for k in keys]
    out = [
        "| " + " | ".join(k.ljust(w) for k, w in zip(keys, widths, strict=True)) + " |",
        "|" + "|".join("-" * (w + 2) for w in widths) + "|",
    ]
    out += ["| " + " | ".join(str(r[k]).ljust(w) for k, w in zip(keys, widths, strict=True)) + " |" for r in rows]
    return "\n".join(out)


def summary(results: dict[str, list[dict[str, object]]]) -> str:
    """Fork x version: edits placed by patchctl / by git / by git with their partners."""
    labels = [str(r["version"]) for r in next(iter(results.values()))]
    rows = [
        {
            "fork": name,
            **{v: f"{r['patchctl']} / {r['git']} / {r['git, partners kept']}" for v, r in zip(labels, rs, strict=True)},
        }
        for name, rs in results.items()
    ]
    return "edits placed: patchctl / git apply -3 / git, partners kept\n\n" + table(rows) + "\n"


def run_fork(
    name: str,
    mirrors: Path,
    verl_git: Path,
    work: Path,
    versions: list[str],
    log: list[str],
    spots: list[str],
    results: dict[str, list[dict[str, object]]],
    links: list[str],
) -> str:
    fork_git = mirrors / FORKS[name] / "repo"
    base_rev, how = fs.find_base(fork_git, verl_git)
    w = work / name
    fork = fs.export(fork_git, "HEAD", w / "fork")
    base = fs.export(verl_git, base_rev, w / f"base-{base_rev[:12]}")
    out = w / "patchset"
    shutil.rmtree(out, ignore_errors=True)
    t0 = time.perf_counter()
    report = capture(fork, str(base), out, all_=True, name=name.lower())
    t_cap = time.perf_counter() - t0
    ps = load_patchset(out)
    kinds = Counter(p.kind for p in ps.patches)
    sizes = sorted(anchor_sizes(ps)) or [0]
    log += [f"{name} capture left-out {x.where}: {x.reason[:300]}" for x in report.left_out]
    links += cross_links(name, ps)
    gd = fs.scratch_repo(base, fork, w)
    rows = [one_version(name, ps, base, "base", base, gd, w, log, [])]
    rows += [one_version(name, ps, base, v, fs.version_tree(v, verl_git, work), gd, w, log, spots) for v in versions]
    head = (
        f"### {name}\n\nbase: verl {base_rev[:12]} ({how}); capture: {len(ps.patches)} patches "
        f"({', '.join(f'{k} {n}' for k, n in sorted(kinds.items()))}), {len(report.left_out)} edit(s) left out, "
        f"{sum(1 for p in ps.patches if p.needs)} with needs, {len(cross_links(name, ps))} cross-file link(s), "
        f"{t_cap:.1f} s; structural anchor size (lines) "
        f"median {statistics.median(sizes):g}, p90 {sizes[int(0.9 * (len(sizes) - 1))]}, max {sizes[-1]}\n"
    )
    results[name] = rows
    return head + "\n" + table(rows) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--forks", default=",".join(FORKS))
    ap.add_argument("--versions", default=VERSIONS)
    ap.add_argument("--mirrors", type=Path, default=Path("/work/.mirror"), help="where fetch left the bare mirrors")
    ap.add_argument("--work", type=Path, default=Path.home() / ".cache" / "patchctl-bench" / "forks")
    ap.add_argument("--spot", type=int, default=20, help="placed edits to list for reading")
    ap.add_argument("--links", type=int, default=10, help="cross-file links to list for reading")
    ap.add_argument("--out", type=Path, default=Path(__file__).parent / "results")
    args = ap.parse_args()
    verl_git = args.mirrors / "volcengine+verl" / "repo"
    log: list[str] = []
    spots: list[str] = []
    results: dict[str, list[dict[str, object]]] = {}
    links: list[str] = []
    parts = [
        run_fork(n, args.mirrors, verl_git, args.work, args.versions.split(","), log, spots, results, links)
        for n in args.forks.split(",")
    ]
    text = summary(results) + "\n" + "\n".join(parts)
    print(text)
    picked = random.Random(27).sample(spots, min(args.spot, len(spots)))
    args.out.mkdir(exist_ok=True)
    (args.out / "forks.md").write_text(text, encoding="utf-8")
    (args.out / "forks_detail.txt").write_text(
        "\n".join(log) + "\n\nspot-check sample:\n" + "\n".join(picked) + "\n", encoding="utf-8"
    )
    print("spot-check sample (read each placed edit in the patched tree):\n" + "\n".join(picked))
    linked = random.Random(27).sample(links, min(args.links, len(links)))
    (args.out / "forks_links.txt").write_text("\n".join(links) + "\n\nspot-check sample:\n" + "\n".join(linked) + "\n")
    print(f"cross-file links: {len(links)}; spot-check sample (read both ends):\n" + "\n".join(linked))


if __name__ == "__main__":
    main()
