"""A no-change re-run of ``patchctl migrate`` as a user runs it, beside 2 parallel ``rsync -a``.

bench_migrate.py times migrate with ``--json`` and a hash cache of its own. The figures of issue
39 (a re-run of verl 0.6.1 to 2 hosts: 1.0 s against 0.35 s for rsync, 3.1x) were whole
commands as a user types them: ``python -m patchctl migrate CLUSTER --target TREE``, its table
printed, start-up imports, the source's verify, the lock and ssh set-up all included. This
script times exactly that, each run a fresh process, against one ``rsync -a --exclude /.git``
per host started at once over the same ssh config, the commands taking turns run by run
(``--runs``, default 3), after one first migrate and rsync that fill the hosts.

Beside the whole commands, what they are made of, each as its own process: Python with
patchctl's command line loaded (``patchctl --version``) and the source's check alone
(``patchctl verify``). ``--baseline REF`` runs the patchctl of another commit too (a git
worktree of this repository), interleaved with this one: a before/after in one run. CPU is
user+system of the command and every process it waited for, here (the hosts' side is not
counted: they run on this machine too, so on few cores read the ratios, not the seconds).

    python benchmarks/bench_migrate_whole.py [--runs 3] [--sizes verl,10k] [--baseline REF]

Needs rsync, ssh and /usr/sbin/sshd (apt-get install rsync openssh-server openssh-client).
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "migrate"))

from sshd_harness import LoopbackCluster, missing_tools

from bench_migrate_trees import SIZES, build

ROOT = Path(__file__).resolve().parent.parent
#: issue 39's goal for whole commands
GOAL = 1.5


def timed(argvs: list[list[str]], env: dict[str, str]) -> tuple[float, float]:
    """The commands at once: wall seconds until all ended, and their CPU seconds (with children)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    procs = [subprocess.Popen(a, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env) for a in argvs]
    outs = [p.communicate()[0] for p in procs]
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    for argv, p, out in zip(argvs, procs, outs, strict=True):
        if p.returncode != 0:
            raise SystemExit(f"{' '.join(argv[:5])} failed ({p.returncode}): {out.decode()[-1500:]}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def env_of(src: Path, cache: Path) -> dict[str, str]:
    """patchctl of ``src``, bytecode cached (as after pip install), the benchmark's own cache."""
    env = {**os.environ, "PYTHONPATH": str(src), "PATCHCTL_CACHE": str(cache)}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--sizes", default="verl", help=f"comma-separated, of: {', '.join(SIZES)}")
    ap.add_argument("--version", default="0.6.1")
    ap.add_argument("--baseline", default=None, help="a commit of this repository to run beside the working tree")
    args = ap.parse_args()
    why = missing_tools()
    if why:
        print(f"skipped: {why}")
        return 0
    py = [sys.executable, "-m", "patchctl"]
    with tempfile.TemporaryDirectory(prefix="pcwhole-", dir=os.environ.get("BENCH_TMP")) as tmp_s:
        tmp = Path(tmp_s)
        builds = {"": ROOT / "src"}
        if args.baseline:
            old = tmp / "baseline"
            subprocess.run(
                ["git", "-C", str(ROOT), "worktree", "add", "-q", "--detach", str(old), args.baseline], check=True
            )
            builds[f" @{args.baseline[:10]}"] = old / "src"
        loop = LoopbackCluster(tmp / "sshd", 2)
        try:
            print(
                f"no-change re-run to 2 sshd hosts on loopback, {os.cpu_count()} CPUs, load "
                f"{os.getloadavg()[0]:.1f} at start; median of {args.runs} interleaved runs; goal: migrate <= {GOAL}x"
            )
            for key in args.sizes.split(","):
                _size(tmp, key, args, builds, loop, py)
        finally:
            loop.close()
            if args.baseline:
                subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(old)], check=False)
    return 0


def _size(
    tmp: Path, key: str, args: argparse.Namespace, builds: dict[str, Path], loop: LoopbackCluster, py: list[str]
) -> None:
    tree = build(tmp / f"src-{key}", args.version, SIZES[key], py, env_of(builds[""], tmp / "cache"))
    aliases = [h.alias for h in loop.hosts]
    rsh = f"ssh -F {loop.ssh_config} -o BatchMode=yes"
    base = tmp / f"roots-{key}"
    rsyncs = [
        ["rsync", "-a", "--exclude", "/.git", "-e", rsh, f"{tree}/", f"{a}:{base / 'rsync' / a}/verl_Uky/"]
        for a in aliases
    ]
    commands: dict[str, tuple[list[list[str]], dict[str, str]]] = {"2 x rsync -a": (rsyncs, dict(os.environ))}
    for suffix, src in builds.items():
        cache = tmp / f"cache{suffix.strip()}"  # each patchctl its own hash cache and seals
        roots = base / f"migrate{suffix.strip()}"
        for a in aliases:
            (roots / a).mkdir(parents=True, exist_ok=True)
        config = loop.write_config(tmp / f"bench{suffix.strip()}.toml", roots, aliases=aliases)
        argv = [*py, "migrate", "loop", "--target", str(tree), "--config", str(config)]
        env = env_of(src, cache)
        commands[f"migrate{suffix}"] = ([argv], env)
        commands[f"migrate --json{suffix}"] = ([[*argv, "--json"]], env)
        commands[f"  start-up (--version){suffix}"] = ([[*py, "--version"]], env)
        commands[f"  source check (verify){suffix}"] = ([[*py, "verify", "--target", str(tree)]], env)
    for a in aliases:
        (base / "rsync" / a).mkdir(parents=True, exist_ok=True)
    for argvs, env in commands.values():  # the first runs: the hosts' trees, the caches, the seals
        timed(argvs, env)
    rows: dict[str, list[tuple[float, float]]] = {name: [] for name in commands}
    names = list(commands)
    for run in range(args.runs):
        for name in names if run % 2 == 0 else names[::-1]:  # each side first every other run
            os.sync()
            rows[name].append(timed(*commands[name]))
    rsync = statistics.median(w for w, _ in rows["2 x rsync -a"])
    print(f"\n{SIZES[key].name}: {tree}")
    print("| command | wall s (median) | wall s (min) | CPU s here | vs 2 x rsync -a | goal |")
    print("|---|---|---|---|---|---|")
    for name, runs in rows.items():
        wall = statistics.median(w for w, _ in runs)
        ratio = f"{wall / rsync:.2f}x" if name != "2 x rsync -a" else "-"
        goal = f"<= {GOAL}x" if name.startswith("migrate") else ""
        cpu = statistics.median(c for _, c in runs)
        print(f"| {name} | {wall:.3f} | {min(w for w, _ in runs):.3f} | {cpu:.3f} | {ratio} | {goal} |", flush=True)


if __name__ == "__main__":
    sys.exit(main())
