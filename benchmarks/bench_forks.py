"""Real verl forks carried across verl releases: patchctl beside ``git apply -3`` (issues 27, 38).

For each fork (TinyZero, Search-R1, Skywork-OR1; bare mirrors as the search tool's ``fetch``
leaves them) it finds the verl base (``forks_setup.find_base``), captures the fork with
``capture --all`` and, on each verl version, plans the patchset on a pristine tree beside
``git apply -3`` of the fork's diff, file by file, in a scratch repository that holds the base
and fork blobs (so git's clean 3-way merges count for git). patchctl's side is ``apply`` as a user runs it, its
3-way fallback included (the base texts ``capture`` keeps in ``bases/``,
:mod:`patchctl.patchsets.threeway`), so both tools may merge from the base.

The unit is the fork's in-place hunk (``forks_hunks``): a ``git diff -U0`` hunk of a file both
base and fork hold, placed when its added lines are in the result and its removed lines are gone,
judged by the same test in both tools' results (git's conflict regions read as upstream's side,
so git's clean hunks in a conflicted file still count). Per version it prints:

- ``hunks``, those ``patchctl`` and ``git`` placed, and the hunks only one of them placed, with
  how many of those are right (same enclosing ``Class.method`` or YAML key path as in the fork,
  and the file still loads); each such hunk, with its verdict, is in the detail file;
- ``fmt ruff/black``: the patches whose outcome on the version run through ``ruff format``
  (and ``black``) differs from their outcome on the version as released (``forks_format``);
  each in the detail file with both outcomes and the reason;
- ``unloadable patchctl / git``: files the tool left that no longer load as their type though
  the version's did (``patchctl.patchsets.loads``); git's files with conflict markers are
  counted apart (``git markers``), as a user sees those as conflicts;
- patchctl's conflicts by patch, those ``apply --conflicts=markers`` marks, and the times.

Per fork: capture's patches by kind, what it left out, structural anchor sizes, and speed and
memory as a user meets them: ``patchctl capture`` and ``patchctl matrix`` over the base and
the versions, each a fresh process, with wall time, CPU time and peak RSS.

    python benchmarks/bench_forks.py [--forks TinyZero,...] [--versions v0.2.0.post2,...] [--spot 20]
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import statistics
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import forks_format as ff
import forks_hunks as fh
import forks_setup as fs
from forks_measure import anchor_sizes, spot
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
#: outcomes that read alike for the fmt column: the edit is in the tree either way
_SAME = {Outcome.ALREADY_APPLIED: Outcome.APPLIED}


def fork_hunks(gd: Path, base: Path, fork: Path) -> dict[str, list[fh.Hunk]]:
    """The fork's in-place hunks per file (files both trees hold, as text)."""
    status = fs.git("diff", "--name-status", "--no-renames", "base", "fork", env={"GIT_DIR": str(gd)}).stdout
    out: dict[str, list[fh.Hunk]] = {}
    for ln in status.splitlines():
        kind, rel = ln.split("\t", 1)
        if kind != "M" or fs.read(base / rel) is None:
            continue
        diff = subprocess.run(
            ["git", f"--git-dir={gd}", "diff", "-U0", "--no-renames", "base", "fork", "--", rel],
            capture_output=True,
            check=True,
        ).stdout.decode("utf-8", "surrogateescape")
        if "\nBinary files " not in diff and diff.strip():
            out[rel] = fh.parse(rel, diff)
    return {rel: hs for rel, hs in out.items() if hs}


def self_check(name: str, hunks: dict[str, list[fh.Hunk]], base: Path, fork: Path) -> None:
    """The judge judged: on the base, the fork's own files hold every hunk, the base's none."""
    for rel, hs in hunks.items():
        b, f = fs.read(base / rel) or "", fs.read(fork / rel) or ""
        placed = fh.judge(hs, b, f, b, f).placed
        unplaced = fh.judge(hs, b, f, b, b).placed
        wrong = [h.key for h in hs if not placed[h]] + [h.key for h in hs if unplaced[h]]
        if wrong:
            sys.exit(f"{name}: the hunk test misjudges the fork or its base at {', '.join(wrong[:5])}")


def outcomes(ps: Patchset, tree: Path, label: str) -> dict[str, PatchResult]:
    return {r.patch: r for r in plan_apply(open_tree(tree, label), [ps]).results}


def fmt_diffs(ps: Patchset, tree: Path, label: str, plain: dict[str, PatchResult], work: Path, log: list[str]) -> str:
    """Per formatter, the patches whose outcome on ``tree`` formatted differs from ``plain``."""
    counts = []
    for tool in ff.TOOLS:
        files = sorted({p.target[0] for p in ps.patches})
        done = outcomes(ps, ff.formatted(tree, tool, work / "formatted" / tool / label, files), f"{label}+{tool}")
        bad = 0
        for pid, r in plain.items():
            mine = done[pid]
            if _SAME.get(mine.status, mine.status) != _SAME.get(r.status, r.status):
                bad += 1
                log.append(
                    f"{ps.name} {label} fmt-{tool} {pid} {r.path}: {r.status.value} -> {mine.status.value}: "
                    f"{' '.join(mine.reason.split())[:300]}"
                )
        counts.append(str(bad))
    return "/".join(counts)


def one_version(
    name: str,
    ps: Patchset,
    trees: tuple[Path, Path],
    hunks: dict[str, list[fh.Hunk]],
    label: str,
    vtree: Path,
    gd: Path,
    work: Path,
    log: list[str],
    spots: list[str],
) -> dict[str, object]:
    base, fork = trees
    t0 = time.perf_counter()
    plan = plan_apply(open_tree(vtree, label), [ps])
    t_pc = time.perf_counter() - t0
    t0 = time.perf_counter()
    texts, raw, clean, marked = fs.git_three_way(gd, vtree, work / "git-out" / label)
    t_git = time.perf_counter() - t0
    by_id = {p.id: p for p in ps.patches}
    n = mine = gits = 0
    only: dict[str, list[int]] = {"patchctl": [0, 0], "git": [0, 0]}
    for rel, hs in hunks.items():
        version = fs.read(vtree / rel)
        results = {
            "patchctl": plan.after.get(rel, version),
            "git": texts.get(rel, version),
        }
        base_text, fork_text = fs.read(base / rel) or "", fs.read(fork / rel) or ""
        judged = {who: fh.judge(hs, base_text, fork_text, version, text) for who, text in results.items()}
        for h in hs:
            n += 1
            got = {who: j.placed[h] for who, j in judged.items()}
            mine += got["patchctl"]
            gits += got["git"]
            if got["patchctl"] != got["git"]:
                who = "patchctl" if got["patchctl"] else "git"
                verdict = fh.right(h, base_text, fork_text, version, results[who], judged[who].where[h])
                only[who][0] += 1
                only[who][1] += verdict == "right"
                first = next((x.strip() for x in h.added + h.removed if x.strip()), "")
                log.append(
                    f"{name} {label} only-{who} {h.key} (-{len(h.removed)} +{len(h.added)}) {verdict}: {first[:100]}"
                )
    unloadable = {"patchctl": 0, "git": 0}
    for rel, text in plan.after.items():
        why = fh.unloadable(rel, fs.read(vtree / rel), text, fs.read(base / rel), fs.read(fork / rel))
        if why:
            unloadable["patchctl"] += 1
            log.append(f"{name} {label} unloadable-patchctl {rel}: {why}")
    markers = 0
    for rel, text in raw.items():
        if text is not None and any(ln.startswith("<<<<<<< ") for ln in text.splitlines()):
            markers += 1
            continue
        why = fh.unloadable(rel, fs.read(vtree / rel), text, fs.read(base / rel), fs.read(fork / rel))
        if why:
            unloadable["git"] += 1
            log.append(f"{name} {label} unloadable-git {rel}: {why}")
    if label != "base":
        for r in plan.results:
            p = by_id[r.patch]
            if r.status is Outcome.APPLIED and p.kind == "structural":
                spots += spot(name, label, p, ps, plan.after.get(p.target[0]))
    plain = {r.patch: r for r in plan.results}
    fmt = fmt_diffs(ps, vtree, label, plain, work, log)
    conflicts = sum(r.status.is_failure for r in plan.results)
    for r in plan.results:
        if r.status.is_failure or r.status in (Outcome.HELD_BACK, Outcome.NOT_APPLICABLE):
            log.append(f"{name} {label} {r.status.value} {r.patch} {r.path}: {' '.join(r.reason.split())[:300]}")
    conflicts_mod.mark(plan, [ps])
    return {
        "version": label,
        "hunks": n,
        "patchctl": mine,
        "git": gits,
        "only patchctl (right)": f"{only['patchctl'][0]} ({only['patchctl'][1]})",
        "only git (right)": f"{only['git'][0]} ({only['git'][1]})",
        "fmt ruff/black": fmt,
        "unloadable patchctl/git": f"{unloadable['patchctl']}/{unloadable['git']}",
        "git markers": markers,
        "patches": len(plan.results),
        "conflict": conflicts,
        "marked": sum(r.status is Outcome.CONFLICT_MARKED for r in plan.results),
        "n/a": sum(r.status is Outcome.NOT_APPLICABLE for r in plan.results),
        "held": sum(r.status is Outcome.HELD_BACK for r in plan.results),
        "held, cross-file": held_across(plan.results, by_id),
        "git hunks clean/marked": f"{clean}/{marked}",
        "patchctl s": f"{t_pc:.1f}",
        "git s": f"{t_git:.1f}",
    }


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
    """Fork x version: in-place hunks placed by patchctl / by git apply -3 (``<``: patchctl places fewer)."""
    labels = [str(r["version"]) for r in next(iter(results.values()))]
    rows = [
        {
            "fork": name,
            "hunks": rs[0]["hunks"],
            **{
                v: f"{r['patchctl']} / {r['git']}{' <' if int(str(r['patchctl'])) < int(str(r['git'])) else ''}"
                for v, r in zip(labels, rs, strict=True)
            },
        }
        for name, rs in results.items()
    ]
    fmt = [{"fork": name, **{str(r["version"]): r["fmt ruff/black"] for r in rs}} for name, rs in results.items()]
    bad = [
        {"fork": name, **{str(r["version"]): r["unloadable patchctl/git"] for r in rs}} for name, rs in results.items()
    ]
    return (
        "in-place hunks placed: patchctl / git apply -3 (`<`: patchctl below git)\n\n"
        + table(rows)
        + "\n\npatches whose outcome differs on the version run through ruff format / black\n\n"
        + table(fmt)
        + "\n\nfiles left unloadable: patchctl / git (git's files with conflict markers apart)\n\n"
        + table(bad)
        + "\n"
    )


def measured(argv: list[str]) -> dict[str, float]:
    """``argv`` as a fresh process: wall s, CPU s (user + system) and peak RSS MB of its largest process."""
    probe = (
        "import json, resource, subprocess, sys, time\n"
        "t = time.perf_counter()\n"
        "rc = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode\n"
        "u = resource.getrusage(resource.RUSAGE_CHILDREN)\n"
        "print(json.dumps([time.perf_counter() - t, u.ru_utime + u.ru_stime, u.ru_maxrss / 1024, rc]))\n"
    )
    out = subprocess.run([sys.executable, "-c", probe, *argv], capture_output=True, text=True, check=True)
    wall, cpu, rss, rc = json.loads(out.stdout)
    return {"wall": wall, "cpu": cpu, "rss": rss, "rc": rc}


def speed(fork: Path, base: Path, versions: list[str], base_rev: str, verl_git: Path, work: Path) -> str:
    """capture and matrix over the base and the versions as a user runs them, each a fresh process."""
    cli = [sys.executable, "-m", "patchctl"]
    out = work / "patchset-cli"
    shutil.rmtree(out, ignore_errors=True)
    cap = measured([*cli, "capture", "--from", str(fork), "--base", str(base), "--out", str(out), "--all"])
    refs = [base_rev] + [v if v.startswith("v") else f"verl=={v}" for v in versions]
    mat = measured(
        [
            *cli,
            "matrix",
            "--repo",
            str(fs.clone(verl_git, work.parent / "verl-clone")),
            "--versions",
            ",".join(refs),
            "-p",
            str(out),
            "--json",
        ]
    )
    return (
        f"speed: capture {cap['wall']:.1f} s wall, {cap['cpu']:.1f} s CPU, "
        f"peak RSS {cap['rss']:.0f} MB (exit {cap['rc']:g}); "
        f"matrix over {len(refs)} versions {mat['wall']:.1f} s wall, {mat['cpu']:.1f} s CPU (all processes), "
        f"peak RSS {mat['rss']:.0f} MB (largest process; exit {mat['rc']:g})\n"
    )


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
    hunks = fork_hunks(gd, base, fork)
    self_check(name, hunks, base, fork)
    rows = [one_version(name, ps, (base, fork), hunks, "base", base, gd, w, log, [])]
    rows += [
        one_version(name, ps, (base, fork), hunks, v, fs.version_tree(v, verl_git, work), gd, w, log, spots)
        for v in versions
    ]
    head = (
        f"### {name}\n\nbase: verl {base_rev[:12]} ({how}); capture: {len(ps.patches)} patches "
        f"({', '.join(f'{k} {n}' for k, n in sorted(kinds.items()))}), {len(report.left_out)} edit(s) left out, "
        f"{sum(1 for p in ps.patches if p.needs)} with needs, {len(cross_links(name, ps))} cross-file link(s), "
        f"{t_cap:.1f} s; structural anchor size (lines) "
        f"median {statistics.median(sizes):g}, p90 {sizes[int(0.9 * (len(sizes) - 1))]}, max {sizes[-1]}; "
        f"{sum(map(len, hunks.values()))} in-place hunks in {len(hunks)} files\n\n"
        + speed(fork, base, versions, base_rev, verl_git, w)
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
