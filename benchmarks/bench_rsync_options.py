"""What migrate's transfer options cost beside plain ``rsync -a``: one host, a first transfer.

migrate's rsync differs from ``rsync -a`` by two guarantees: ``--delay-updates`` (with
``--partial-dir``: every file parked in a holding folder and renamed into place at the end, so an
interrupted transfer leaves the host's tree as it was) and the host-side wrapper that holds the
root's transfer lock for as long as the host's rsync runs (``--rsync-path``, see
remote.lock_agent). This sends verl 0.6.1 (patched) to an empty root of one loopback sshd host,
over one master connection, with each variant in turn, run after run (a change of load hits them
alike), and prints the median wall and client CPU milliseconds:

- ``rsync -a``, as the scaling benchmark's baseline runs it;
- ``rsync -a --delay-updates``;
- migrate's argv (transfer.rsync_argv);
- migrate's without ``--delay-updates``, without the wrapper, and without both;
- migrate's into an empty root (``empty_root``: neither ``--delay-updates`` nor
  ``--omit-dir-times``), which is what a first run sends with.

    python benchmarks/bench_rsync_options.py [--runs 15] [--size verl|10k]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "migrate"))

from sshd_harness import LoopbackCluster, missing_tools

from bench_migrate_trees import SIZES, build, patchctl_command
from patchctl.clusters import load_cluster
from patchctl.migrate import filelist, fileset, transfer
from patchctl.remote import ssh


def variants(cluster_file: Path, tree: Path, scratch: Path, control: Path) -> dict[str, list[str]]:
    """Each variant's argv, all into the host's root and over the master at ``control``."""
    cluster = load_cluster("loop", cluster_file)
    host = cluster.hosts[0]
    walked = fileset.walk(tree, cluster)
    files = filelist.SendList(scratch / "files", tree, walked.paths).path()
    ours = transfer.rsync_argv(cluster, host, tree, files, dry_run=False, control=control)
    at = ours.index("--rsync-path")
    plain = ["rsync", "-a", "--exclude", "/.git", "-e", ssh.rsh_command(cluster, control)]
    target = [f"{tree}/", f"{host.ssh}:{host.root}/"]
    return {
        "rsync -a": [*plain, *target],
        "rsync -a --delay-updates": [*plain, "--delay-updates", *target],
        "migrate's": ours,
        "migrate's, no --delay-updates": [a for a in ours if a != "--delay-updates"],
        "migrate's, no lock wrapper": ours[:at] + ours[at + 2 :],
        "migrate's, neither": [a for a in ours[:at] + ours[at + 2 :] if a != "--delay-updates"],
        "migrate's into an empty root": transfer.rsync_argv(
            cluster, host, tree, files, dry_run=False, control=control, empty_root=True
        ),
    }


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=15)
    ap.add_argument("--size", default="verl", choices=("verl", "10k"), help="the tree (bench_migrate_trees)")
    args = ap.parse_args()
    why = missing_tools()
    if why:
        print(f"skipped: {why}")
        return 0
    patchctl = patchctl_command()
    with tempfile.TemporaryDirectory(prefix="pcrsync-") as tmp_s:
        tmp = Path(tmp_s)
        loop = LoopbackCluster(tmp / "sshd", 1)
        try:
            tree = build(tmp / "src", "0.6.1", SIZES[args.size], patchctl, dict(os.environ))
            root = tmp / "hosts" / "node1" / "verl_Uky"
            config = loop.write_config(tmp / "c.toml", tmp / "hosts")
            cluster = load_cluster("loop", config)
            master = ssh.Master(cluster, cluster.hosts[0], tmp, 0)
            master.start()
            if master.open() is not None:
                raise SystemExit("could not log in to the loopback host")
            try:
                argvs = variants(config, tree, tmp, master.socket)
                walls: dict[str, list[float]] = {k: [] for k in argvs}
                cpus: dict[str, list[float]] = {k: [] for k in argvs}
                for _ in range(args.runs):
                    for name, argv in argvs.items():
                        shutil.rmtree(root, ignore_errors=True)
                        root.mkdir(parents=True)
                        os.sync()
                        began = time.perf_counter()
                        p = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
                        _, status, usage = os.wait4(p.pid, 0)
                        walls[name].append(time.perf_counter() - began)
                        cpus[name].append(usage.ru_utime + usage.ru_stime)
                        if os.waitstatus_to_exitcode(status) != 0:
                            assert p.stderr is not None
                            raise SystemExit(f"{name} failed: {p.stderr.read().decode()[-500:]}")
            finally:
                master.close()
        finally:
            loop.close()
    tree_name = "verl 0.6.1" + ("" if args.size == "verl" else f" + {args.size} small files")
    print(f"{tree_name}: first transfer to 1 loopback host, {os.cpu_count()} CPUs, median of {args.runs} runs")
    print("| transfer | wall ms | client CPU ms |")
    print("|---|---|---|")
    for name in walls:
        print(f"| {name} | {statistics.median(walls[name]) * 1e3:.0f} | {statistics.median(cpus[name]) * 1e3:.0f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
