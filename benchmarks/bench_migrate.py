"""`patchctl migrate` beside as many parallel `rsync -a` as hosts, as the tree and the cluster grow.

One table, each row measured side by side in one run (median of ``--runs``): a tree size
(verl 0.6.1 patched; + 10k or + 100k small files; + 1 GB or + 10 GB of data, all untracked and
not ignored, see bench_migrate_trees.py) sent to 2, 4 or 8 real sshd hosts on loopback:

- first: fresh roots on every host; migrate with a cold hash cache here and there, against one
  `rsync -a --exclude /.git` per host (the same files migrate sends), all at once, over the same
  ssh config; goal <= 1.5x;
- again: a no-change re-run of both (0 bytes sent); goal <= 1.5x.

Each command starts after a ``sync`` (no writes of the one before still being flushed), and
rsync and migrate take turns going first, run by run.

Besides the ratios: the CPU seconds spent here (migrate and every process it waited for: ssh,
rsync, git; beside the rsyncs' own, with their ssh), peak RSS (patchctl's own, from /proc, and the
largest of its processes, from wait4), and where each host's time went
(``--json``'s phases, the slowest host's: file set / transfer / verification / rendering).
The hosts run on this machine too, so on few cores read the ratios, not the seconds.
bench_migrate_whole.py times a no-change re-run as a user types it (no ``--json``, its table
printed), with its parts (start-up, the source's check) as commands of their own.

    python benchmarks/bench_migrate.py [--sizes verl,10k,1g] [--hosts 2,4] [--runs 3] [--version 0.6.1]

Sizes: verl, 10k, 100k, 1g, 10g; hosts: any counts. Where a side's copies exceed 4 GB they are
deleted before the other side's are made: 10 GB to 2 hosts needs ~30 GB of disk, not 50.
Needs rsync, ssh and /usr/sbin/sshd (apt-get install rsync openssh-server openssh-client).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "migrate"))

from sshd_harness import LoopbackCluster, missing_tools

from bench_migrate_trees import SIZES, build, patchctl_command, tree_size

PHASES = ("fileset", "transfer", "verify", "render")


@dataclass
class Run:
    """One command's measurements: wall seconds, CPU seconds, peak RSS (MB), slowest host's phases."""

    wall: float
    cpu: float = 0.0
    rss: float = 0.0
    phases: dict[str, float] = field(default_factory=dict)
    #: patchctl's own peak RSS, MB (``rss``: the largest process of its tree)
    own: float = 0.0


def parallel(argvs: list[list[str]]) -> Run:
    """The commands at once; the wall time until all ended, and their CPU seconds (wait4)."""
    start = time.perf_counter()
    procs = [subprocess.Popen(a, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) for a in argvs]
    cpu = 0.0
    for argv, p in zip(argvs, procs, strict=True):
        _, status, usage = os.wait4(p.pid, 0)
        p.returncode = os.waitstatus_to_exitcode(status)
        cpu += usage.ru_utime + usage.ru_stime
        if p.returncode != 0:
            raise SystemExit(f"{' '.join(argv[:4])} failed ({p.returncode})")
    return Run(time.perf_counter() - start, cpu)


def own_peak(pid: int, peak: list[float], done: threading.Event) -> None:
    """patchctl's own peak RSS (VmHWM, MB), read every 50 ms while it runs: wait4's maximum is that
    of its largest descendant, which may be git or rsync."""
    while not done.wait(0.05):
        try:
            status = Path(f"/proc/{pid}/status").read_text()
        except OSError:
            return
        for line in status.splitlines():
            if line.startswith("VmHWM:"):
                peak[0] = max(peak[0], int(line.split()[1]) / 1024)


def migrate(argv: list[str], env: dict[str, str], again: bool) -> Run:
    """One migrate, its CPU and peak RSS from wait4 (it and the descendants it waited for);
    ``again``: a no-change re-run, which must send nothing."""
    start = time.perf_counter()
    with tempfile.TemporaryFile() as err:
        p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=err, env=env)
        assert p.stdout is not None
        peak, done = [0.0], threading.Event()
        watcher = threading.Thread(target=own_peak, args=(p.pid, peak, done))
        watcher.start()
        out = p.stdout.read()
        done.set()
        watcher.join()
        _, status, usage = os.wait4(p.pid, 0)
        p.returncode = os.waitstatus_to_exitcode(status)
        wall = time.perf_counter() - start
        doc = json.loads(out or b"{}")
        if p.returncode != 0 or not doc.get("ok"):
            err.seek(0)
            raise SystemExit(f"migrate failed ({p.returncode}): {err.read().decode()[-2000:]} {out.decode()[-2000:]}")
    phases = {k: max(h["phases"][k] for h in doc["hosts"]) for k in PHASES}
    if again and sum(h["files_sent"] for h in doc["hosts"]):
        raise SystemExit("a no-change re-run sent files")
    return Run(wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, phases, peak[0])


def row(
    tmp: Path,
    tree: Path,
    loop: LoopbackCluster,
    hosts: int,
    runs: int,
    patchctl: list[str],
    env: dict[str, str],
    one_set: bool = False,
) -> dict[str, list[Run]]:
    """``runs`` rounds of: rsync first and again, then migrate first (cold caches) and again.
    ``one_set``: the hosts hold one side's copies at a time (10 GB to 2 hosts is 20 GB per side)."""
    aliases = [h.alias for h in loop.hosts[:hosts]]
    rsh = f"ssh -F {loop.ssh_config} -o BatchMode=yes"
    out: dict[str, list[Run]] = {k: [] for k in ("rsync first", "rsync again", "migrate first", "migrate again")}
    for run in range(runs):
        shutil.rmtree(tmp / "roots", ignore_errors=True)  # the hosts' trees of the run before
        base = tmp / "roots"
        plain = [
            ["rsync", "-a", "--exclude", "/.git", "-e", rsh, f"{tree}/", f"{a}:{base / 'rsync' / a}/verl_Uky/"]
            for a in aliases
        ]
        for a in aliases:
            (base / "rsync" / a).mkdir(parents=True)
            (base / "migrate" / a).mkdir(parents=True)
        config = loop.write_config(tmp / "bench.toml", base / "migrate", aliases=aliases)
        shutil.rmtree(Path(env["PATCHCTL_CACHE"]) / "migrate", ignore_errors=True)  # cold here: no hash cache
        argv = [*patchctl, "migrate", "loop", "--target", str(tree), "--config", str(config), "--json"]
        steps = [
            ("rsync first", partial(parallel, plain)),
            ("rsync again", partial(parallel, plain)),
            ("migrate first", partial(migrate, argv, env, again=False)),
            ("migrate again", partial(migrate, argv, env, again=True)),
        ]
        # each side goes first every other run; each step starts with no writes of the one before
        # still being flushed (the second of two GB-sized copies would pay for the first one's)
        for name, step in steps if run % 2 == 0 else steps[2:] + steps[:2]:
            os.sync()
            out[name].append(step())
            if one_set and name.endswith("again"):  # that side's copies go before the other side's come
                shutil.rmtree(base / name.split()[0])
    return out


def med(runs: list[Run], attr: str) -> float:
    return statistics.median(getattr(r, attr) for r in runs)


def spread(r: dict[str, list[Run]], kind: str) -> str:
    """The lowest and highest of the runs' own ratios (each run's migrate over the same run's rsync)."""
    ratios = [m.wall / s.wall for m, s in zip(r[f"migrate {kind}"], r[f"rsync {kind}"], strict=True)]
    return f"{min(ratios):.2f}-{max(ratios):.2f}"


def phases(runs: list[Run]) -> str:
    return "/".join(f"{statistics.median(r.phases[k] for r in runs):.2f}" for k in PHASES)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="verl,10k,1g", help=f"comma-separated, of: {', '.join(SIZES)}")
    ap.add_argument("--hosts", default="2", help="comma-separated host counts, e.g. 2,4,8")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--version", default="0.6.1")
    args = ap.parse_args()
    sizes, counts = args.sizes.split(","), [int(n) for n in args.hosts.split(",")]
    if any(s not in SIZES for s in sizes):
        raise SystemExit(f"--sizes: use some of {', '.join(SIZES)}")
    why = missing_tools()
    if why:
        print(f"skipped: {why}")
        return 0
    patchctl = patchctl_command()
    print(
        f"migrate vs {'/'.join(map(str, counts))} parallel rsync -a, sshd hosts on loopback, {os.cpu_count()} CPUs, "
        f"load {os.getloadavg()[0]:.1f} at start; median of {args.runs} run(s); goal: ratio <= 1.5x"
    )
    print(
        "| tree | files | MB | hosts | migrate first / again s | rsync first / again s | ratio first / again "
        "| spread of the runs' ratios, first / again "
        "| CPU s here, migrate first / again | rsync first / again | peak RSS MB, patchctl / any of its processes "
        "| phases first: set/xfer/verify/render s | phases again |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory(prefix="pcbench-", dir=os.environ.get("BENCH_TMP")) as tmp_s:
        tmp = Path(tmp_s)
        env = dict(os.environ, PATCHCTL_CACHE=str(tmp / "cache"))
        env.pop("PYTHONDONTWRITEBYTECODE", None)  # bytecode cached, as after pip install
        loop = LoopbackCluster(tmp / "sshd", max(counts))
        try:
            for key in sizes:
                src = tmp / f"src-{key}"
                tree = build(src, args.version, SIZES[key], patchctl, dict(os.environ))
                files, total = tree_size(tree)
                for n in counts:
                    r = row(tmp, tree, loop, n, args.runs, patchctl, env, one_set=total * n > 4e9)
                    mf, ma = med(r["migrate first"], "wall"), med(r["migrate again"], "wall")
                    rf, ra = med(r["rsync first"], "wall"), med(r["rsync again"], "wall")
                    print(
                        f"| {SIZES[key].name} | {files:,} | {total / 1e6:,.0f} | {n} | {mf:.2f} / {ma:.2f} | "
                        f"{rf:.2f} / {ra:.2f} | {mf / rf:.2f}x / {ma / ra:.2f}x | "
                        f"{spread(r, 'first')} / {spread(r, 'again')} | "
                        f"{med(r['migrate first'], 'cpu'):.2f} / {med(r['migrate again'], 'cpu'):.2f} | "
                        f"{med(r['rsync first'], 'cpu'):.2f} / {med(r['rsync again'], 'cpu'):.2f} | "
                        f"{max(x.own for x in r['migrate first'] + r['migrate again']):.0f} / "
                        f"{max(x.rss for x in r['migrate first'] + r['migrate again']):.0f} | "
                        f"{phases(r['migrate first'])} | {phases(r['migrate again'])} |",
                        flush=True,
                    )
                    # after the row is out: 16 x 100k files take minutes (one_set rows removed theirs)
                    shutil.rmtree(tmp / "roots", ignore_errors=True)
                shutil.rmtree(src)
        finally:
            loop.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
