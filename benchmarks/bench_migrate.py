"""`patchctl migrate` of a patched verl tree to 3 real sshd hosts on loopback, beside `rsync -a`.

Rows (median of N runs, each a fresh process, after one warm-up run of each that is not counted):
- first migrate to 3 hosts (fresh roots) vs the record's way, one plain `rsync -a` of the whole
  directory to one host (fresh root): the ratio's goal is <= 1.5x;
- a no-change re-run of the 3-host migrate: goal <= 1 s and 0 files sent;
- verification per host, as a fresh round trip (ssh session, login shell, python3, the check)
  and as migrate waits for it after rsync (agent started while rsync ran): goal <= 0.5 s.

Each row also gives the CPU seconds (user + system) spent here (patchctl/rsync/ssh and all
they waited for) and on the hosts (sshd, login shells, rsync receivers, agents), so a ratio
can be read as CPU saturation (the CPU needed / the cores) or as waiting.

patchctl runs with its bytecode cached (as after `pip install`, which compiles it) in a private
PYTHONPYCACHEPREFIX even where PYTHONDONTWRITEBYTECODE is set; --no-pyc keeps the environment.

    python benchmarks/bench_migrate.py [--runs N] [--version 0.6.1] [--python /usr/bin/python3] [--no-pyc]

Needs rsync, ssh and /usr/sbin/sshd (apt-get install rsync openssh-server openssh-client).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "migrate"))

from sshd_harness import LoopbackCluster, missing_tools

from patchctl import releases
from patchctl.clusters import load_cluster
from patchctl.migrate import fileset, provenance, render, verify_remote
from patchctl.patchsets.loader import load_patchsets
from patchctl.remote import ssh


@dataclass
class Row:
    wall: list[float] = field(default_factory=list)
    local_cpu: list[float] = field(default_factory=list)
    host_cpu: list[float] = field(default_factory=list)


def children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def timed(argvs: list[list[str]], loop: LoopbackCluster, row: Row | None, env: dict[str, str] | None = None) -> str:
    """Run the commands at once; record the wall time until all ended, the CPU of them and their
    children, and the hosts' CPU. Returns the first one's stdout."""
    host0, local0 = loop.cpu_seconds(), children_cpu()
    start = time.perf_counter()
    procs = [subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
             for argv in argvs]
    outs = [p.communicate() for p in procs]
    elapsed = time.perf_counter() - start
    for argv, p, (_, err) in zip(argvs, procs, outs, strict=True):
        if p.returncode != 0:
            raise SystemExit(f"{' '.join(argv[:3])} failed ({p.returncode}): {err[-2000:]}")
    if row is not None:
        row.wall.append(elapsed)
        row.local_cpu.append(children_cpu() - local0)
        row.host_cpu.append(loop.cpu_seconds() - host0)
    return outs[0][0]


def verify_once(config: Path, tree: Path, fresh: Row, started: Row) -> None:
    """The check per host after an arrived tree, over the host's master connection: once as a
    fresh round trip, once with the agent started ahead (what migrate waits for after rsync)."""
    cluster = load_cluster("loop", config)
    sets = load_patchsets(())
    example = render.find_example(tree, sets)
    fs = fileset.collect(tree, cluster, (render.GIT_IGNORE,))
    tags = verify_remote.tags_request(fs, {p.tag for ps in sets for p in ps.patches}, (render.GIT_IGNORE,))
    with tempfile.TemporaryDirectory(prefix="pcb-", dir="/tmp") as tmp:
        for i, host in enumerate(cluster.hosts):
            master = ssh.Master(cluster, host, Path(tmp), i)
            assert master.open() is None
            try:
                request = {"action": "finish", "manifest": [e.as_manifest() for e in fs.entries],
                           "rendered": render.rendered_files(cluster, host, example), "delete": False,
                           "max_delete": 100, "tags": tags, "provenance": provenance.build(fs, cluster)}
                start = time.perf_counter()
                reply = verify_remote.call(cluster, host, request, 60, master.socket)
                fresh.wall.append(time.perf_counter() - start)
                assert reply.failure is None and not verify_remote.mismatches(reply), reply
                with verify_remote.Agent(cluster, host, master.socket) as agent:
                    time.sleep(1.0)  # as if rsync were still running
                    start = time.perf_counter()
                    reply = agent.ask(request, 60)
                    started.wall.append(time.perf_counter() - start)
                assert reply.failure is None and not verify_remote.mismatches(reply), reply
            finally:
                master.close()


def patchctl_env(tmp: Path, keep: bool) -> dict[str, str]:
    env = dict(os.environ)
    if not keep:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = str(tmp / "pycache")
    return env


def fmt(values: list[float]) -> str:
    return f"{statistics.median(values):>9.2f}" if values else f"{'-':>9}"


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--version", default="0.6.1")
    ap.add_argument("--python", default=None, help="the cluster's python key (default: python3 on the hosts' PATH)")
    ap.add_argument("--no-pyc", action="store_true", help="run patchctl as the environment says (no bytecode cache)")
    args = ap.parse_args()
    why = missing_tools()
    if why:
        print(f"skipped: {why}")
        return 0
    script = Path(sys.executable).with_name("patchctl")
    patchctl = (
        [str(script)] if script.exists() else [sys.executable, "-c", "from patchctl.cli.main import main; main()"]
    )
    with tempfile.TemporaryDirectory(prefix="pcbench-") as tmp_s:
        tmp = Path(tmp_s)
        env = patchctl_env(tmp, args.no_pyc)
        tree = tmp / "verl_Uky"
        shutil.copytree(releases.materialize(args.version), tree, symlinks=True)
        subprocess.run([*patchctl, "apply", "--target", str(tree)], check=True, capture_output=True, env=env)
        loop = LoopbackCluster(tmp / "sshd", 3)
        extra = f'python = "{args.python}"\n' if args.python else ""
        rows = {"rsync -a, 1 host": Row(), "rsync -a, 3 hosts at once": Row(), "migrate, 3 hosts, first": Row(),
                "migrate, 3 hosts, no change": Row(), "verify per host, fresh": Row(),
                "verify per host, as migrate": Row()}
        rsh = f"ssh -F {loop.ssh_config} -o BatchMode=yes"

        def plain(alias: str, name: str) -> list[str]:
            """The record's way: rsync -a of the whole directory, to a fresh root whose parent exists."""
            dest = tmp / name / alias
            dest.mkdir(parents=True)
            return ["rsync", "-a", "-e", rsh, f"{tree}/", f"{alias}:{dest}/verl_Uky/"]

        sent_again: list[int] = []
        try:
            for run in range(-1, args.runs):  # run -1: the warm-up, not counted
                row: dict[str, Row | None] = {k: (v if run >= 0 else None) for k, v in rows.items()}
                timed([plain("node1", f"one{run}")], loop, row["rsync -a, 1 host"])
                timed([plain(h.alias, f"three{run}") for h in loop.hosts], loop, row["rsync -a, 3 hosts at once"])
                config = loop.write_config(tmp / f"run{run}.toml", tmp / f"roots{run}", extra=extra)
                for h in loop.hosts:  # the roots' parents exist, as the baseline's does
                    (tmp / f"roots{run}" / h.alias).mkdir(parents=True)
                argv = [*patchctl, "migrate", "loop", "--target", str(tree), "--config", str(config), "--json"]
                out = timed([argv], loop, row["migrate, 3 hosts, first"], env)
                assert json.loads(out)["ok"], out
                out = timed([argv], loop, row["migrate, 3 hosts, no change"], env)
                if run >= 0:
                    sent_again.append(sum(h["files_sent"] for h in json.loads(out)["hosts"]))
                    verify_once(config, tree, rows["verify per host, fresh"], rows["verify per host, as migrate"])
        finally:
            loop.close()
        files = len(fileset.collect(tree, load_cluster("loop", config), (render.GIT_IGNORE,)).entries)
    report(rows, sent_again, files, args)
    return 0


def report(rows: dict[str, Row], sent_again: list[int], files: int, args: argparse.Namespace) -> None:
    med = {k: statistics.median(r.wall) for k, r in rows.items()}
    base, first = med["rsync -a, 1 host"], med["migrate, 3 hosts, first"]
    cores = os.cpu_count() or 1

    def cpu(key: str) -> float:
        r = rows[key]
        return statistics.median(a + b for a, b in zip(r.local_cpu, r.host_cpu, strict=True))

    goals = {
        "rsync -a, 1 host": "baseline (the record's way)",
        "rsync -a, 3 hosts at once": f"reference only: {med['rsync -a, 3 hosts at once'] / base:.2f}x the baseline",
        "migrate, 3 hosts, first": f"ratio {first / base:.2f}x (goal <= 1.5x)",
        "migrate, 3 hosts, no change": f"{max(sent_again)} files sent (goal 0, <= 1 s)",
        "verify per host, fresh": "goal <= 0.5 s",
        "verify per host, as migrate": "goal <= 0.5 s",
    }
    print(f"verl {args.version} + uky ({files} files), 3 sshd hosts on loopback, {cores} CPUs, "
          f"python on hosts: {args.python or 'python3 on PATH'}, patchctl bytecode: "
          f"{'as the environment says' if args.no_pyc else 'cached'}; median of {args.runs} runs")
    print(f"{'what':<30}{'median s':>9}{'min s':>8}{'max s':>8}{'cpu here':>9}{'cpu hosts':>10}   note")
    for key, r in rows.items():
        print(f"{key:<30}{med[key]:>9.3f}{min(r.wall):>8.3f}{max(r.wall):>8.3f}{fmt(r.local_cpu)}"
              f"{fmt(r.host_cpu):>10}   {goals[key]}")
    three = cpu("rsync -a, 3 hosts at once")
    print(f"CPU seconds, here + hosts (median): rsync -a 1 host {cpu('rsync -a, 1 host'):.2f}, 3 hosts {three:.2f}, "
          f"first migrate {cpu('migrate, 3 hosts, first'):.2f} ({cpu('migrate, 3 hosts, first') / three:.2f}x the "
          f"3-host rsync), no-change migrate {cpu('migrate, 3 hosts, no change'):.2f}")
    print(f"On {cores} CPUs that CPU alone needs >= {three / cores:.2f} s for 3 x rsync -a (ratio >= "
          f"{three / cores / base:.2f}x) and >= {cpu('migrate, 3 hosts, first') / cores:.2f} s for the first migrate "
          f"(ratio >= {cpu('migrate, 3 hosts, first') / cores / base:.2f}x)")


if __name__ == "__main__":
    sys.exit(main())
