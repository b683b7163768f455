"""`patchctl migrate` of a patched verl tree to 3 real sshd hosts on loopback, beside `rsync -a`.

Rows (median of N runs, each a fresh process):
- first migrate to 3 hosts (fresh roots) vs the record's way, one plain `rsync -a` of the whole
  directory to one host (fresh root): the ratio's goal is <= 1.5x;
- a no-change re-run of the 3-host migrate: goal <= 1 s and 0 files sent;
- verification per host: the agent's check round trip on an arrived tree, over the host's
  master connection as migrate makes it (goal <= 0.5 s).

    python benchmarks/bench_migrate.py [--runs N] [--version 0.6.1] [--python /usr/bin/python3]

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
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "migrate"))

from sshd_harness import LoopbackCluster, missing_tools  # noqa: E402

from patchctl import releases  # noqa: E402
from patchctl.clusters import load_cluster  # noqa: E402
from patchctl.migrate import fileset, provenance, render, ssh, verify_remote  # noqa: E402
from patchctl.patchsets.loader import load_patchsets  # noqa: E402


def timed(argv: list[str]) -> tuple[float, str]:
    start = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv[:3])} failed ({done.returncode}): {done.stderr[-2000:]}")
    return elapsed, done.stdout


def verify_once(config: Path, tree: Path) -> list[float]:
    """The check round trip per host, as migrate runs it after rsync (master connection open)."""
    cluster = load_cluster("loop", config)
    sets = load_patchsets(())
    example = render.find_example(tree, sets)
    fs = fileset.collect(tree, cluster, (render.GIT_IGNORE,))
    tags = verify_remote.tags_request(fs, {p.tag for ps in sets for p in ps.patches}, (render.GIT_IGNORE,))
    out = []
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
                out.append(time.perf_counter() - start)
                assert reply.failure is None and not verify_remote.mismatches(reply), reply
            finally:
                master.close()
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--version", default="0.6.1")
    ap.add_argument("--python", default=None, help="the cluster's python key (default: python3 on the hosts' PATH)")
    args = ap.parse_args()
    why = missing_tools()
    if why:
        print(f"skipped: {why}")
        return 0
    script = Path(sys.executable).with_name("patchctl")
    patchctl = [str(script)] if script.exists() else [sys.executable, "-c", "from patchctl.cli.main import main; main()"]
    with tempfile.TemporaryDirectory(prefix="pcbench-") as tmp_s:
        tmp = Path(tmp_s)
        tree = tmp / "verl_Uky"
        shutil.copytree(releases.materialize(args.version), tree, symlinks=True)
        timed([*patchctl, "apply", "--target", str(tree)])
        loop = LoopbackCluster(tmp / "sshd", 3)
        extra = f'python = "{args.python}"\n' if args.python else ""
        rows: dict[str, list[float]] = {"rsync -a, 1 host": [], "migrate, 3 hosts, first": [],
                                        "migrate, 3 hosts, no change": [], "verify, per host": []}
        sent_again: list[int] = []
        try:
            for run in range(args.runs):
                dest = tmp / f"plain{run}" / "verl_Uky"
                dest.parent.mkdir()
                rsh = f"ssh -F {loop.ssh_config} -o BatchMode=yes"
                rows["rsync -a, 1 host"].append(timed(["rsync", "-a", "-e", rsh, f"{tree}/", f"node1:{dest}/"])[0])
                config = loop.write_config(tmp / f"run{run}.toml", tmp / f"roots{run}", extra=extra)
                for h in loop.hosts:  # the roots' parents exist, as the baseline's does
                    (tmp / f"roots{run}" / h.alias).mkdir(parents=True)
                argv = [*patchctl, "migrate", "loop", "--target", str(tree), "--config", str(config), "--json"]
                seconds, out = timed(argv)
                assert json.loads(out)["ok"], out
                rows["migrate, 3 hosts, first"].append(seconds)
                seconds, out = timed(argv)
                rows["migrate, 3 hosts, no change"].append(seconds)
                sent_again.append(sum(h["files_sent"] for h in json.loads(out)["hosts"]))
                rows["verify, per host"] += verify_once(config, tree)
        finally:
            loop.close()
        files = len(fileset.collect(tree, load_cluster("loop", config), (render.GIT_IGNORE,)).entries)
    med = {k: statistics.median(v) for k, v in rows.items()}
    base = med["rsync -a, 1 host"]
    goals = {"migrate, 3 hosts, first": f"ratio {med['migrate, 3 hosts, first'] / base:.2f}x (goal <= 1.5x)",
             "migrate, 3 hosts, no change": f"{max(sent_again)} files sent (goal 0, <= 1 s)",
             "verify, per host": "goal <= 0.5 s"}
    print(f"verl {args.version} + uky ({files} files), 3 sshd hosts on loopback, {os.cpu_count()} CPUs, "
          f"python on hosts: {args.python or 'python3 on PATH'}; median of {args.runs} runs")
    print(f"{'what':<30}{'median s':>10}{'min s':>9}{'max s':>9}   note")
    for key, values in rows.items():
        print(f"{key:<30}{med[key]:>10.3f}{min(values):>9.3f}{max(values):>9.3f}   {goals.get(key, 'baseline')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
