"""`patchctl migrate` then `patchctl validate` on loopback sshd hosts: the 2-node run, the 1-node
run holding both GPUs, `--compare` of the two, and the time breakdown against issue 12's goals.

Two modes:

- CPU (default): the stand-in verl of tests/validate (a script using the formed Ray cluster) and a
  stub nvidia-smi; shows the bring-up and the pipeline's own cost on this machine.
- GPU (``--tree PATH``): a patched verl tree and the machine's real GPUs. This is the GPU proof of
  issue 12 on ``nvidia-h200-x2`` (run from the repository root, sshd and rsync unpacked first)::

      python benchmarks/bench_validate.py --tree /tmp/w/verl-0.5.0 --out docs/validation/multinode \\
          --env PYTHONPATH=/tmp/site

  Two ssh destinations on one machine (node1 at 127.0.0.2, node2 at 127.0.0.3), each with one GPU
  (``hosts[i].env.CUDA_VISIBLE_DEVICES`` "0" and "1"), NVLink multicast off in the cluster env
  (NCCL_NVLS_ENABLE=0, TORCH_SYMM_MEM_DISABLE_MULTICAST=1, NVSHMEM_DISABLE_NVLS=1: migrate renders
  them into each host's .patchctl/env.sh and validate passes them to every process it starts):
  ``patchctl migrate two`` then ``patchctl validate two --profile smoke`` (trainer.nnodes=2,
  trainer.n_gpus_per_node=1 from Ray); then one host holding both GPUs (``CUDA_VISIBLE_DEVICES``
  "0,1": nnodes=1, n_gpus_per_node=2); then ``--compare``. ``--out`` receives each run's
  report.json, report.png, train.log, validate.json, the compare output and plot, the config and
  commands.txt with the exact commands.

Goals printed beside the figures (GPU mode): verdict <= 90 s from `patchctl validate` for the
2-node smoke run; Ray bring-up (first ssh of the bring-up to every node registered) <= 10 s.

    python benchmarks/bench_validate.py [--tree PATH] [--out DIR] [--env K=V ...] [--skip CHECK ...] [--profile smoke]
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "migrate"))

from sshd_harness import LoopbackCluster, Workspace, missing_tools, workspace  # noqa: E402 - importable once sys.path has the folder above

MULTICAST_OFF = {"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1", "NVSHMEM_DISABLE_NVLS": "1"}
CPU_SKIP = ["torch", "vllm", "patches"]


def host(alias: str, address: str, root: Path, cvd: str, gpus: int, env: dict[str, str]) -> str:
    table = ", ".join(f'{k} = "{v}"' for k, v in {**env, "CUDA_VISIBLE_DEVICES": cvd}.items())
    return f'{{ ssh = "{alias}", root = "{root}", address = "{address}", gpus = {gpus}, env = {{ {table} }} }}'


def config(
    path: Path, loop: LoopbackCluster, clusters: dict[str, list[str]], env: dict[str, str], skip: list[str]
) -> None:
    text = ""
    for name, hosts in clusters.items():
        text += (
            f"[clusters.{name}]\nhosts = [\n  " + ",\n  ".join(hosts) + '\n]\nroot = "/unused"\n'
            f'ssh_config = "{loop.ssh_config}"\npython = "{sys.executable}"\n'
            + (f"preflight_skip = {json.dumps(skip)}\n" if skip else "")
            + "[clusters."
            + name
            + ".env]\n"
            + "".join(f'{k} = "{v}"\n' for k, v in env.items())
            + "\n"
        )
    path.write_text(text)


def patchctl(args: list[str], log: list[str], cwd: Path) -> tuple[int, float, str]:
    log.append("patchctl " + " ".join(args))
    t0 = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "patchctl", *args], cwd=cwd, capture_output=True, text=True)
    return done.returncode, time.monotonic() - t0, done.stdout + done.stderr


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tree", type=Path, help="a patched verl tree (GPU mode); default: the CPU stand-in")
    ap.add_argument("--out", type=Path, help="where the reports, plots and commands go")
    ap.add_argument("--env", action="append", default=[], help="K=V for the cluster env (e.g. PYTHONPATH=/tmp/site)")
    ap.add_argument("--profile", default="smoke")
    ap.add_argument("--skip", action="append", default=[], help="a verify --env check to leave out (repeatable)")
    args = ap.parse_args()
    why = missing_tools()
    if why:
        print(f"cannot run: {why}")
        return 2
    cpu = args.tree is None
    ws = None
    try:
        with workspace("pcv-bench-", args.out) as ws:
            return _run(args, cpu, ws)
    finally:
        if ws is not None and args.out is None:
            print(f"(work directory kept: {ws.work})")


def _run(args: argparse.Namespace, cpu: bool, ws: Workspace) -> int:
    work, out, roots = ws.work, ws.out, ws.roots
    tree, env = tree_and_env(work, args.tree, args.env)
    cfg = out / "patchctl.toml"
    config(
        cfg,
        ws.loop,
        {
            "two": [
                host("node1", "127.0.0.2", roots["node1"], "0", 1, {}),
                host("node2", "127.0.0.3", roots["node2"], "1", 1, {}),
            ],
            "one": [host("node1", "127.0.0.2", roots["node1"], "0,1", 2, {})],
        },
        env,
        (CPU_SKIP if cpu else []) + args.skip,
    )
    log: list[str] = []
    rows = []
    for name in ("two", "one"):
        code, secs, text = patchctl(["migrate", name, "--target", str(tree), "--config", str(cfg)], log, work)
        print(f"migrate {name}: rc={code} in {secs:.1f} s")
        if code:
            print(text[-3000:])
            return 1
        run_dir = out / f"{name}-node{'s' if name == 'two' else ''}"
        shutil.rmtree(run_dir, ignore_errors=True)
        extra = ["--compare", str(out / "two-nodes" / "report.json")] if name == "one" else []
        code, secs, text = patchctl(
            ["validate", name, "--profile", args.profile, "--config", str(cfg), "--out", str(run_dir), *extra],
            log,
            work,
        )
        (out / f"validate-{name}.txt").write_text(text)
        doc = json.loads((run_dir / "validate.json").read_text()) if (run_dir / "validate.json").exists() else {}
        ray = doc.get("ray") or {}
        registered = max((n["joined_at"] for n in ray.get("nodes", [])), default=None)
        rows.append((name, code, secs, doc.get("verdict"), registered, ray.get("seconds"), doc.get("timings", {})))
        print(f"validate {name}: rc={code}, wall {secs:.1f} s, verdict {doc.get('verdict')} {doc.get('cause', '')}")
    (out / "commands.txt").write_text("\n".join(log) + "\n")
    print("\n| run | verdict | wall (s) | nodes registered (s) | Ray up incl. GPU check (s) | breakdown (s) |")
    print("|---|---|---|---|---|---|")
    for name, code, secs, verdict, registered, ray_s, t in rows:
        parts = ", ".join(f"{k} {v}" for k, v in t.items() if v is not None)
        print(f"| {name} | {verdict} (rc {code}) | {secs:.1f} | {registered} | {ray_s} | {parts} |")
    two = rows[0]
    if not cpu:
        print(f"\ngoal: 2-node verdict <= 90 s: {two[2]:.1f} s -> {'met' if two[2] <= 90 else 'MISSED'}")
        if two[4] is not None:
            print(f"goal: Ray bring-up <= 10 s: {two[4]:.1f} s -> {'met' if two[4] <= 10 else 'MISSED'}")
    print(f"\nreports, plots, compare and commands in {out}")
    return 0 if all(r[1] == 0 for r in rows) else 1


def tree_and_env(work: Path, tree: Path | None, pairs: list[str]) -> tuple[Path, dict[str, str]]:
    """The tree to migrate (``tree``, else the CPU stand-in copied into ``work``) and the cluster
    env: NVLink multicast off, the ``--env K=V`` pairs, and in CPU mode the stub nvidia-smi first
    on PATH."""
    env = {**MULTICAST_OFF, **dict(e.split("=", 1) for e in pairs)}
    if tree is not None:
        return tree.resolve(), env
    env["PATH"] = f"{REPO / 'tests' / 'validate' / 'stub_bin'}:/usr/local/bin:/usr/bin:/bin"
    return _standin(work), env


def _standin(work: Path) -> Path:
    tree = work / "src" / "verl_Uky"
    shutil.copytree(REPO / "tests" / "validate" / "standin", tree, ignore=shutil.ignore_patterns("__pycache__"))
    for cmd in (
        ["init", "-q", "-b", "main"],
        ["add", "-A"],
        ["-c", "user.name=b", "-c", "user.email=b@b", "commit", "-q", "-m", "stand-in"],
    ):
        subprocess.run(["git", "-C", str(tree), *cmd], check=True, capture_output=True)
    return tree


if __name__ == "__main__":
    sys.exit(main())
