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

``--matrix SRC,...`` measures instead ``patchctl matrix --repo`` over Skywork-OR1's 8 versions (its
``capture`` patchset, as ``bench_forks.py``'s speed line runs it), with and without
``--no-history``, each a fresh process and walks on disk cold, once per source tree given (``src``
folders: main's beside a branch's, one after the other, side by side in one run): CPU seconds of
every process (a subreaper collects the walk's helpers, whichever process they outlive) and peak
RSS of the largest. ``--dump`` then keeps each run's ``--json`` output for comparison.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import os
import resource
import shutil
import subprocess
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
from patchctl.patchsets.plan import Plan, plan_apply
from patchctl.target import open_tree

#: fork -> (its mirror, the verl commit forks_setup.find_base finds for it; benchmarks/results/forks.md)
FORKS = {
    "TinyZero": ("Jiayi-Pan+TinyZero", "884a7273123c"),
    "Search-R1": ("PeterGriffinJin+Search-R1", "6d96fda3d47f"),
    "Skywork-OR1": ("SkyworkAI+Skywork-OR1", "ec82e9e5a386"),
}
VERSIONS = "v0.2.0.post2,v0.3.0.post1,v0.4.1,v0.5.0,v0.6.1,v0.7.0"


def cpu() -> float:
    """CPU seconds of this process, of the processes it waited for, and of those still running
    (user + system): the walk's long-lived children (``git cat-file --batch``, the helper that
    starts its git commands, :mod:`patchctl.patchsets.history.runner`) are waited for only when
    the walker closes, and their CPU, with that of the commands they waited for, counts too."""
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime + running()


def running() -> float:
    """CPU seconds of this process's live children, theirs and their waited-for children's (/proc)."""
    total = 0
    for task in Path("/proc/self/task").iterdir():  # a child belongs to the thread that forked it
        try:
            pids = (task / "children").read_text().split()
        except OSError:
            continue
        for pid in pids:
            try:
                fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
            except OSError:
                continue
            total += sum(int(v) for v in fields[11:15])  # utime stime cutime cstime (fields 14-17)
    return total / os.sysconf("SC_CLK_TCK")


def placed(ps: Patchset, results: list[PatchResult]) -> int:
    in_place = {p.id for p in ps.patches if not KINDS[p.kind].creates_target}
    return sum(1 for r in results if r.patch in in_place and r.status in IN_TREE)


def outcomes(name: str, version: str, plan: Plan) -> list[dict[str, str | None]]:
    """Each patch's outcome, reason and the sha256 of the text its file ends with: what ``--dump``
    writes, so that two runs (two versions of the code) can be compared for identical results."""
    out = []
    for r in plan.results:
        text = plan.after.get(r.path) if r.path else None
        sha = hashlib.sha256(text.encode("utf-8", "surrogateescape")).hexdigest() if isinstance(text, str) else None
        out.append(
            {
                "fork": name,
                "version": version,
                "patch": r.patch,
                "status": r.status.value,
                "reason": r.reason,
                "path": r.path,
                "placed_sha": sha,
            }
        )
    return out


def run_fork(
    name: str, mirrors: Path, verl_git: Path, work: Path, versions: list[str], dump: list[dict[str, str | None]]
) -> list[list[str]]:
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
            walked_plan = history.plan(tree, [ps])
            t2, c2 = time.perf_counter(), cpu()
            walked = walked_plan.results
            dump += outcomes(name, v, walked_plan)
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


#: run as a fresh process by :func:`measured`: the command, every descendant reaped (the probe is
#: their subreaper), then wall s, CPU s of them all, peak RSS MB of the largest, exit code
PROBE = """
import ctypes, json, os, resource, subprocess, sys, time
ctypes.CDLL(None).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER: orphans come back here
t = time.perf_counter()
with open(sys.argv[1], "wb") as out:
    rc = subprocess.run(sys.argv[2:], stdout=out, stderr=subprocess.DEVNULL).returncode
while True:
    try:
        os.wait()
    except ChildProcessError:
        break
u = resource.getrusage(resource.RUSAGE_CHILDREN)
print(json.dumps([time.perf_counter() - t, u.ru_utime + u.ru_stime, u.ru_maxrss / 1024, rc]))
"""

MATRIX_FORK = "Skywork-OR1"
MATRIX_VERSIONS = VERSIONS + ",verl==0.9.1"


def measured(argv: list[str], src: Path, cache: Path, out: Path) -> dict[str, float]:
    """``argv`` (patchctl's) run from ``src`` as a fresh process, walks on disk cold; its stdout to ``out``."""
    shutil.rmtree(cache / "history", ignore_errors=True)
    env = {**os.environ, "PYTHONPATH": str(src), "PATCHCTL_CACHE": str(cache)}
    done = subprocess.run(
        [sys.executable, "-c", PROBE, str(out), sys.executable, "-m", "patchctl", *argv],
        capture_output=True,
        text=True,
        check=True,
        env=env,
    )
    wall, cpu_s, rss, rc = json.loads(done.stdout)
    return {"wall": wall, "cpu": cpu_s, "rss": rss, "rc": rc}


def matrix_speed(srcs: list[Path], mirrors: Path, verl_git: Path, work: Path, dump: Path | None) -> str:
    """``matrix --repo`` and ``matrix --repo --no-history`` per source tree, cold; a table."""
    mirror, short = FORKS[MATRIX_FORK]
    base_rev = fs.git(f"--git-dir={verl_git}", "rev-parse", f"{short}^{{commit}}").stdout.strip()
    w = work / "matrix"
    fork = fs.export(mirrors / mirror / "repo", "HEAD", w / "fork")
    base = fs.export(verl_git, base_rev, w / f"base-{base_rev[:12]}")
    ps = w / "patchset-cli"
    if not (ps / "patchset.toml").is_file():
        capture(fork, str(base), ps, all_=True, name="patchset-cli")
    # a cache of its own (walks cold whatever else runs), the releases of the user's one
    cache = w / "cache"
    cache.mkdir(parents=True, exist_ok=True)
    home = Path(os.environ.get("PATCHCTL_CACHE") or Path.home() / ".cache" / "patchctl")
    for entry in ("releases", "trees"):
        if (home / entry).exists() and not (cache / entry).exists():
            (cache / entry).symlink_to(home / entry)
    clone = fs.clone(verl_git, w / "verl-clone")
    argv = ["matrix", "--repo", str(clone), "--versions", f"{base_rev},{MATRIX_VERSIONS}", "-p", str(ps), "--json"]
    lines = [
        f"`matrix --repo` over {MATRIX_FORK}'s {1 + len(MATRIX_VERSIONS.split(','))} versions, walks on disk cold "
        "(CPU of every process, peak RSS of the largest):",
        "",
        "| source | CPU s --no-history | CPU s --repo | ratio | wall s --no-history | wall s --repo | peak RSS |",
        "|---|---|---|---|---|---|---|",
    ]
    for i, src in enumerate(srcs):
        outs = [w / f"out-{i}-plain.json", w / f"out-{i}-walked.json"]
        plain = measured([*argv, "--no-history"], src, cache, outs[0])
        walked = measured(argv, src, cache, outs[1])
        if dump is not None:
            for kind, out in zip(("plain", "walked"), outs, strict=True):
                shutil.copy(out, dump.with_name(f"{dump.stem}-{i}-{kind}.json"))
        row = (
            f"| {src} | {plain['cpu']:.1f} | {walked['cpu']:.1f} | x{walked['cpu'] / plain['cpu']:.2f} "
            f"| {plain['wall']:.1f} | {walked['wall']:.1f} | {max(plain['rss'], walked['rss']):.0f} MB |"
        )
        print(row, flush=True)
        lines.append(row)
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--forks", default=",".join(FORKS))
    ap.add_argument("--versions", default=VERSIONS)
    ap.add_argument("--mirrors", type=Path, default=Path("/work/.mirror"))
    ap.add_argument("--work", type=Path, default=Path.home() / ".cache" / "patchctl-bench" / "history")
    ap.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / "history.md")
    ap.add_argument("--warm", action="store_true", help="keep the walks the last run cached on disk")
    ap.add_argument("--dump", type=Path, help="write each walked outcome (status, reason, placed text's sha) here")
    ap.add_argument("--matrix", help="source trees (src folders, comma-separated) to time matrix --repo from")
    args = ap.parse_args()
    if args.matrix:
        srcs = [Path(p).resolve() for p in args.matrix.split(",")]
        verl = args.mirrors / "volcengine+verl" / "repo"
        text = matrix_speed(srcs, args.mirrors, verl, args.work, args.dump)
        print(text)
        args.out.write_text(text, encoding="utf-8")
        return
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
    dump: list[dict[str, str | None]] = []
    rows = [
        r
        for n in args.forks.split(",")
        for r in run_fork(n, args.mirrors, verl_git, args.work, args.versions.split(","), dump)
    ]
    if args.dump:
        args.dump.write_text("".join(json.dumps(d, sort_keys=True) + "\n" for d in dump), encoding="utf-8")
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
