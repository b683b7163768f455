"""In-place hunks placed with and without ``--repo`` (upstream's history walked), per fork and version.

Issue 38 req 4 and 8: for each fork (TinyZero, Search-R1, Skywork-OR1) the fork is captured
against its verl base (the commit ``bench_forks.py``'s ``find_base`` finds, named here), and on
every version the patchset is planned twice on a pristine tree: by the planner alone (what
``matrix`` does without ``--repo``) and through :class:`~patchctl.patchsets.history.carry.History`
(``matrix --repo``). A hunk is placed when its in-place patch ends applied, already-applied or
superseded-upstream. The walk's caches live as long as one matrix does (one History per fork,
shared by its versions). Times are wall seconds of the planning only, and its CPU seconds (``cpu s``,
git's processes included: the fair measure on a loaded machine); the last lines give the totals,
their ratios (req 8: at most 1.5) and the peak memory.

Walks are also kept on disk (:mod:`patchctl.patchsets.history.disk`), here in ``WORK/cache``: a run
starts with none (cold, what a first ``matrix --repo`` pays) unless ``--warm`` keeps those of the
last run (what the next command pays).

    python benchmarks/bench_history.py [--forks TinyZero,...] [--versions v0.3.0.post1,...] [--warm]
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import resource
import shutil
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import forks_setup as fs
from patchctl.capture.run import capture
from patchctl.patchsets.history.carry import History
from patchctl.patchsets.kinds import KINDS
from patchctl.patchsets.loader import load_patchset
from patchctl.patchsets.model import Outcome, PatchResult, Patchset
from patchctl.patchsets.needs import IN_TREE
from patchctl.patchsets.plan import plan_apply
from patchctl.target import open_tree

#: fork -> (its mirror, the verl commit forks_setup.find_base finds for it; benchmarks/results/forks.md)
FORKS = {
    "TinyZero": ("Jiayi-Pan+TinyZero", "884a7273123c"),
    "Search-R1": ("PeterGriffinJin+Search-R1", "6d96fda3d47f"),
    "Skywork-OR1": ("SkyworkAI+Skywork-OR1", "ec82e9e5a386"),
}
VERSIONS = "v0.2.0.post2,v0.3.0.post1,v0.4.1,v0.5.0,v0.6.1,v0.7.0"


def cpu() -> float:
    """CPU seconds of this process and of the git processes it waited for (user + system)."""
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def placed(ps: Patchset, results: list[PatchResult]) -> int:
    in_place = {p.id for p in ps.patches if not KINDS[p.kind].creates_target}
    return sum(1 for r in results if r.patch in in_place and r.status in IN_TREE)


def run_fork(name: str, mirrors: Path, verl_git: Path, work: Path, versions: list[str]) -> list[list[str]]:
    mirror, short = FORKS[name]
    base_rev = fs.git(f"--git-dir={verl_git}", "rev-parse", f"{short}^{{commit}}").stdout.strip()
    w = work / name
    fork = fs.export(mirrors / mirror / "repo", "HEAD", w / "fork")
    base = fs.export(verl_git, base_rev, w / f"base-{base_rev[:12]}")
    out = w / "patchset"
    if not (out / "patchset.toml").is_file():
        capture(fork, str(base), out, all_=True, name=name.lower())
    ps = load_patchset(out)
    total = sum(1 for p in ps.patches if not KINDS[p.kind].creates_target)
    history = History(verl_git, base=base_rev, strict=False)
    rows = []
    try:
        for v in versions:
            commit = fs.git(f"--git-dir={verl_git}", "rev-parse", f"{v}^{{commit}}").stdout.strip()
            tree = dataclasses.replace(open_tree(fs.version_tree(v, verl_git, work), v), commit=commit)
            t0, c0 = time.perf_counter(), cpu()
            direct = plan_apply(tree, [ps]).results
            t1, c1 = time.perf_counter(), cpu()
            walked = history.plan(tree, [ps]).results
            t2, c2 = time.perf_counter(), cpu()
            removed = sum(1 for r in walked if r.status is Outcome.NOT_APPLICABLE and "upstream removed" in r.reason)
            moved = sum(1 for r in walked if r.status is Outcome.APPLIED and "moved to" in r.reason)
            renamed = sum(1 for r in walked if r.status is Outcome.APPLIED and "renamed to" in r.reason)
            rows.append(
                [
                    name,
                    v,
                    str(total),
                    str(placed(ps, direct)),
                    str(placed(ps, walked)),
                    str(renamed),
                    str(moved),
                    str(removed),
                    f"{t1 - t0:.1f}",
                    f"{t2 - t1:.1f}",
                    f"{c1 - c0:.1f}",
                    f"{c2 - c1:.1f}",
                ]
            )
            print(" | ".join(rows[-1]), flush=True)
    finally:
        history.close()
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--forks", default=",".join(FORKS))
    ap.add_argument("--versions", default=VERSIONS)
    ap.add_argument("--mirrors", type=Path, default=Path("/work/.mirror"))
    ap.add_argument("--work", type=Path, default=Path.home() / ".cache" / "patchctl-bench" / "history")
    ap.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / "history.md")
    ap.add_argument("--warm", action="store_true", help="keep the walks the last run cached on disk")
    args = ap.parse_args()
    verl_git = args.mirrors / "volcengine+verl" / "repo"
    cache = args.work / "cache"
    if not args.warm:
        shutil.rmtree(cache / "history", ignore_errors=True)
    os.environ["PATCHCTL_CACHE"] = str(cache)  # bench_history reads tags only: no release is fetched there
    head = [
        "fork",
        "version",
        "in-place",
        "placed",
        "placed --repo",
        "renamed",
        "moved",
        "removed (commit named)",
        "s",
        "s --repo",
        "cpu s",
        "cpu s --repo",
    ]
    rows = [
        r
        for n in args.forks.split(",")
        for r in run_fork(n, args.mirrors, verl_git, args.work, args.versions.split(","))
    ]
    plain, walked = sum(float(r[8]) for r in rows), sum(float(r[9]) for r in rows)
    plain_cpu, walked_cpu = sum(float(r[10]) for r in rows), sum(float(r[11]) for r in rows)
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)] + ["| " + " | ".join(r) + " |" for r in rows]
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    lines += [
        "",
        f"planning time, all rows: {plain:.1f} s without --repo, {walked:.1f} s with it "
        f"(x{walked / plain:.2f}; the second includes the first plan), peak memory {peak:.0f} MB",
        f"CPU seconds (git's processes included), all rows: {plain_cpu:.1f} without --repo, {walked_cpu:.1f} with "
        f"it (x{walked_cpu / plain_cpu:.2f}); walks on disk: {'warm' if args.warm else 'cold'}",
    ]
    text = "\n".join(lines) + "\n"
    print(text)
    args.out.write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
