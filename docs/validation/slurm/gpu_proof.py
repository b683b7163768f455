"""Issue 36 req 6: ``validate`` through a real Slurm with ``gres/gpu``, as a two-node job (one GPU
each) and as a one-node job with two GPUs; on a machine of one GPU, as a one-node job with that GPU.

One machine plays the cluster, as the tests' fixture does (tests/slurm/slurm_harness.py):
``munged``, ``slurmctld`` and three ``slurmd`` on loopback addresses, each node with the device
files of its GPUs in ``gres.conf`` (n1: GPU 0, n2: GPU 1, n3: both), the partitions ``pair``
(n1, n2) and ``big`` (n3), and a loopback sshd as the login node. Slurm numbers each node's GPUs
from 0, as on separate machines; here n2's GPU 0 is the machine's GPU 1, so a TaskProlog maps each
node's numbers to its device files' (``--local-numbers`` leaves them, and validate's GPU identity
check then fails the pair job: both nodes on one GPU). With one ``--gpu`` (``nvidia-h200``) the
cluster is one node, ``n1`` with that GPU, in the partition ``one``, and the job is ``one`` (1 node x
1 GPU): Slurm still sets ``ROCR_VISIBLE_DEVICES`` beside ``CUDA_VISIBLE_DEVICES`` there, which verl
refuses (the driver's ``env -u``). The tree is migrated to a shared
root (every slurmd sees the same file system), then ``patchctl validate pair`` and
``patchctl validate big`` run one after the other (n3 shares n1's and n2's GPUs, so never at
once). Prints, per job, the verdict, every gate, the nodes and GPUs Ray saw and the timings
(queue, Ray up, first step, verdict), and writes ``summary.json`` and each run's files to --out.

GPU (nvidia-h200-x2; docs/validation/slurm/run_gpu.sh unpacks Slurm, munge, sshd and rsync from
carried Debian packages first)::

    python3 docs/validation/slurm/gpu_proof.py --tree /tmp/w/verl-0.9.1 --out OUT --profile smoke-vllm \\
        --gpu /dev/nvidia0 --gpu /dev/nvidia1 --env PYTHONPATH=... --env RAY_memory_monitor_refresh_ms=0

CPU rehearsal (the stand-in verl, the stub nvidia-smi, two character devices as "GPUs")::

    python3 docs/validation/slurm/gpu_proof.py --out /tmp/slurm-proof
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import stat
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(REPO / "tests" / "slurm"))
sys.path.insert(0, str(REPO / "tests" / "migrate"))
sys.path.insert(0, str(REPO / "benchmarks"))

from slurm_harness import Layout, SlurmCluster  # noqa: E402 - importable once sys.path has the folder
from slurm_harness import missing_tools as slurm_missing  # noqa: E402 - as above
from sshd_harness import LoopbackCluster  # noqa: E402 - as above
from sshd_harness import missing_tools as sshd_missing  # noqa: E402 - as above

from bench_validate import CPU_SKIP, tree_and_env  # noqa: E402 - as above

#: cluster name -> (partition, nodes, GPUs per node)
SHAPES = {"pair": ("pair", 2, 1), "big": ("big", 1, 2), "one": ("one", 1, 1)}


def layout_for(gpus: list[str], cpus: int, physical: bool, cgroup: str) -> tuple[Layout, tuple[str, ...]]:
    """The harness cluster for these GPUs' device files and the jobs it can run: two GPUs give n1,
    n2 (one each) and n3 (both), the jobs pair and big; one GPU gives n1 alone and the job one."""
    if len(gpus) == 1:
        nodes: dict[str, tuple[str, ...]] = {"n1": (gpus[0],)}
        return Layout(nodes, cpus, {"one": ("n1",)}, physical=physical, cgroup=cgroup), ("one",)
    if len(gpus) != 2:
        raise SystemExit(f"--gpu: give one or two GPUs' device files, not {len(gpus)}")
    nodes = {"n1": (gpus[0],), "n2": (gpus[1],), "n3": (gpus[0], gpus[1])}
    parts = {"pair": ("n1", "n2"), "big": ("n3",)}
    return Layout(nodes, cpus, parts, physical=physical, cgroup=cgroup), ("pair", "big")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def config(
    path: Path,
    login: LoopbackCluster,
    root: Path,
    env: dict[str, str],
    cpus: int,
    skip: list[str],
    jobs: tuple[str, ...],
) -> None:
    """One cluster per job; each head's GCS on a free port (another Ray on the machine may hold 6379)."""
    text = ""
    for name in jobs:
        partition, nodes, gpus = SHAPES[name]
        text += (
            f'[clusters.{name}]\nscheduler = "slurm"\nlogin = "node1"\nssh_config = "{login.ssh_config}"\n'
            f'root = "{root}"\nshared_root = true\npartition = "{partition}"\nnodes = {nodes}\n'
            f'gpus_per_node = {gpus}\ncpus_per_task = {cpus}\ntime = "00:09:00"\npython = "{sys.executable}"\n'
            f"ray_port = {free_port()}\n"
            + (f"preflight_skip = {json.dumps(skip)}\n" if skip else "")
            + f"[clusters.{name}.env]\n"
            + "".join(f'{k} = "{v}"\n' for k, v in env.items())
            + "\n"
        )
    path.write_text(text)


def patchctl(args: list[str], log: list[str], cwd: Path, stream: Path | None = None) -> tuple[int, float, str]:
    """One patchctl command; with ``stream``, its output also goes there line by line (the live
    notes: PENDING, RUNNING, Ray up, the step line), each stamped with seconds since its start."""
    log.append("patchctl " + " ".join(args))
    t0 = time.monotonic()
    proc = subprocess.Popen(
        [sys.executable, "-m", "patchctl", *args], cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    lines = []
    assert proc.stdout is not None
    with open(stream, "w") if stream else open("/dev/null", "w") as live:
        for line in proc.stdout:
            lines.append(line)
            live.write(f"[{time.monotonic() - t0:7.1f} s] {line}")
            live.flush()
    return proc.wait(), time.monotonic() - t0, "".join(lines)


def row(name: str, code: int, secs: float, doc: dict) -> dict:
    t = doc.get("timings") or {}

    def upto(*keys: str) -> float | None:
        vals = [t.get(k) for k in keys]
        return round(sum(v for v in vals if v is not None), 1) if all(v is not None for v in vals) else None

    ray = doc.get("ray") or {}
    return {
        "job": name,
        "rc": code,
        "wall_s": round(secs, 1),
        "verdict": doc.get("verdict"),
        "cause": doc.get("cause", ""),
        "slurm": doc.get("slurm"),
        "ray_nodes": [
            {k: n.get(k) for k in ("label", "address", "gpus", "cuda_visible_devices", "gpu_uuids")}
            for n in ray.get("nodes", [])
        ],
        "gates": [
            {k: g.get(k) for k in ("name", "status", "value", "threshold", "reason")}
            for g in (doc.get("trained") or {}).get("gates", [])
        ],
        "timings": t,
        # seconds since submission: what a user waits for each
        "since_submit": {
            "queue": t.get("queue"),
            "ray_up": upto("queue", "preflight", "ray_up"),
            "first_step": upto("queue", "preflight", "ray_up", "startup"),
            "verdict": t.get("total"),
        },
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tree", type=Path, help="a patched verl tree (GPU mode); default: the CPU stand-in")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--env", action="append", default=[], help="K=V for the clusters' env")
    ap.add_argument("--profile", default="smoke")
    ap.add_argument(
        "--gpu", action="append", default=[], help="a GPU's device file (once or twice); default: character devices"
    )
    ap.add_argument("--fake-gpus", type=int, choices=(1, 2), default=2, help="without --gpu: how many stand-in GPUs")
    ap.add_argument("--cpus", type=int, default=2, help="CPUs of each node and cpus_per_task")
    ap.add_argument("--timeout", default="400", help="validate's --timeout (seconds)")
    ap.add_argument("--only", choices=tuple(SHAPES), action="append", help="run these jobs only")
    ap.add_argument("--skip", action="append", default=[], help="a preflight check to leave out")
    ap.add_argument("--ray-cpus", help="validate's --ray-cpus")
    ap.add_argument(
        "--local-numbers",
        action="store_true",
        help="leave Slurm's per-node GPU numbers as they are (n1 and n2 both get GPU 0 of this one machine: "
        "validate's GPU identity check must fail the pair job)",
    )
    args = ap.parse_args()
    why = slurm_missing() or sshd_missing()
    if why:
        print(f"cannot run: {why}")
        return 2
    cpu = args.tree is None
    work = Path(tempfile.mkdtemp(prefix="pcv-slurm-gpu-"))
    out = args.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    gpus = args.gpu or [str(work / "dev" / f"nvidia{i}") for i in range(args.fake_gpus)]
    if not args.gpu:  # character devices named as GPUs (Slurm takes nothing else): /dev/null's numbers
        (work / "dev").mkdir()
        for g in gpus:
            os.mknod(g, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    cgroup = os.environ.get("SLURM_CGROUP_CONF", "CgroupPlugin=cgroup/v1").replace(";", "\n") + "\n"
    layout, jobs = layout_for(gpus, args.cpus, not args.local_numbers, cgroup)
    wrong = [j for j in args.only or () if j not in jobs]
    if wrong:
        print(f"--only {wrong[0]}: this layout ({len(gpus)} GPU(s)) runs {', '.join(jobs)}")
        return 2
    t0 = time.monotonic()
    cluster = SlurmCluster(work / "slurm", layout)
    print(f"slurm up in {time.monotonic() - t0:.1f} s: {cluster.node_states()}")
    (out / "slurm.conf").write_text(cluster.conf.read_text())
    (out / "gres.conf").write_text((cluster.base / "gres.conf").read_text())
    log: list[str] = []
    rows = []
    try:
        login = LoopbackCluster(work / "sshd", 1, env={"SLURM_CONF": str(cluster.conf)})
        try:
            tree, env = tree_and_env(work, args.tree, args.env)
            cfg = out / "patchctl.toml"
            skip = (CPU_SKIP if cpu else []) + args.skip
            config(cfg, login, work / "shared" / "verl_Uky", env, args.cpus, skip, jobs)
            for name in jobs:
                if args.only and name not in args.only:
                    continue
                code, secs, text = patchctl(["migrate", name, "--target", str(tree), "--config", str(cfg)], log, work)
                print(f"migrate {name}: rc={code} in {secs:.1f} s")
                (out / f"migrate-{name}.txt").write_text(text)
                if code:
                    print(text[-3000:])
                    return 1
                run_dir = out / name
                shutil.rmtree(run_dir, ignore_errors=True)
                argv = ["validate", name, "--profile", args.profile, "--config", str(cfg), "--out", str(run_dir)]
                argv += ["--timeout", args.timeout] + (["--ray-cpus", args.ray_cpus] if args.ray_cpus else [])
                code, secs, text = patchctl(argv, log, work, stream=out / f"validate-{name}.txt")
                doc = (
                    json.loads((run_dir / "validate.json").read_text()) if (run_dir / "validate.json").exists() else {}
                )
                r = row(name, code, secs, doc)
                rows.append(r)
                shape = f"{SHAPES[name][1]} node(s) x {SHAPES[name][2]} GPU"
                print(f"\nvalidate {name} ({shape}): rc={code}, wall {secs:.1f} s")
                print(f"  verdict {r['verdict']} {r['cause']}")
                print(f"  slurm {r['slurm']}")
                for n in r["ray_nodes"]:
                    print(f"  ray node {n}")
                for g in r["gates"]:
                    print(f"  {g['name']:<20} {g['status']:<5} {g['value']}  ({g['threshold']})  {g['reason']}")
                print(f"  timings {r['timings']}")
                print(f"  since submission {r['since_submit']}")
                if code and not r["verdict"]:
                    print(text[-3000:])
        finally:
            login.close()
    finally:
        cluster.close()
        (out / "commands.txt").write_text("\n".join(log) + "\n")
        (out / "summary.json").write_text(json.dumps(rows, indent=2) + "\n")
    ok = bool(rows) and all(r["rc"] == 0 and r["verdict"] == "pass" for r in rows)
    print("\nexpected: every job PASS:", "met" if ok else "NOT met")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
