"""`patchctl migrate` then `patchctl validate` on ONE loopback sshd host holding one GPU (issue 21 req 6).

The GPU proof of the vLLM learning smoke through validate: one ssh destination (node1 at
127.0.0.2, a real sshd), one Ray node with the machine's GPU, the verl 0.9.1 tree migrated to it,
then ``patchctl validate one --profile smoke-vllm`` (or, with ``--health``, ``--profile health``
twice, the second beside the first's stack table: issue 22 on one GPU). bench_validate.py does the same for two hosts
(nvidia-h200-x2, not lent today); this reuses its config writer. Run from the repository root
on the GPU machine, sshd and rsync unpacked first (docs/validation/vllm-smoke/run_gpu.sh validate)::

    python benchmarks/validate_one.py --tree /tmp/w/verl-0.9.1 --out OUT --env PYTHONPATH=/tmp/vsite

Prints the wall time from ``patchctl validate`` to its verdict, and validate's own breakdown.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_validate import (
    MULTICAST_OFF,
    LoopbackCluster,
    config,
    host,
    missing_tools,
    patchctl,
)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tree", type=Path, required=True, help="the patched verl tree")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--env", action="append", default=[], help="K=V for the cluster env")
    ap.add_argument("--profile", default="smoke-vllm")
    ap.add_argument("--skip", action="append", default=[], help="a verify --env check to leave out")
    ap.add_argument("--timeout", default="600", help="validate's --timeout (seconds)")
    ap.add_argument(
        "--health",
        action="store_true",
        help="validate --profile health twice (the second with --compare of the first), no training",
    )
    ap.add_argument("--storage-bytes", type=int, default=1 << 30, help="[clusters.one.health] storage_bytes")
    args = ap.parse_args()
    why = missing_tools()
    if why:
        print(f"cannot run: {why}")
        return 2
    work = Path(tempfile.mkdtemp(prefix="pcv-one-"))
    out = args.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    loop = LoopbackCluster(work / "sshd", 1)
    try:
        env = {**MULTICAST_OFF, **dict(e.split("=", 1) for e in args.env)}
        cfg = out / "patchctl.toml"
        config(
            cfg,
            loop,
            {"one": [host("node1", "127.0.0.2", work / "hosts" / "node1" / "verl_Uky", "0", 1, {})]},
            env,
            args.skip,
        )
        if args.health:
            cfg.write_text(cfg.read_text() + f"[clusters.one.health]\nstorage_bytes = {args.storage_bytes}\n")
        log: list[str] = []
        code, secs, text = patchctl(
            ["migrate", "one", "--target", str(args.tree.resolve()), "--config", str(cfg)], log, work
        )
        (out / "migrate.txt").write_text(text)
        print(f"migrate one: rc={code} in {secs:.1f} s")
        if code:
            print(text[-3000:])
            return 1
        if args.health:
            return health(cfg, out, log, work)
        run_dir = out / "one-node"
        shutil.rmtree(run_dir, ignore_errors=True)
        code, secs, text = patchctl(
            [
                "validate",
                "one",
                "--profile",
                args.profile,
                "--config",
                str(cfg),
                "--out",
                str(run_dir),
                "--timeout",
                args.timeout,
            ],
            log,
            work,
        )
        (out / "validate.txt").write_text(text)
        (out / "commands.txt").write_text("\n".join(log) + "\n")
        print(text[-4000:])
        doc = json.loads((run_dir / "validate.json").read_text()) if (run_dir / "validate.json").exists() else {}
        print(f"validate one --profile {args.profile}: rc={code}, wall {secs:.1f} s, verdict {doc.get('verdict')}")
        print("breakdown (s): " + ", ".join(f"{k} {v}" for k, v in (doc.get("timings") or {}).items() if v is not None))
        return code
    finally:
        loop.close()


def health(cfg: Path, out: Path, log: list[str], work: Path) -> int:
    """The cluster-health checks alone (issue 22), then again beside the first run's stack table."""
    worst = 0
    for name, extra in (("health-1", []), ("health-2", ["--compare", str(out / "health-1")])):
        shutil.rmtree(out / name, ignore_errors=True)
        code, secs, text = patchctl(
            ["validate", "one", "--profile", "health", "--config", str(cfg), "--out", str(out / name), *extra],
            log,
            work,
        )
        (out / f"{name}.txt").write_text(text)
        print(text[-6000:])
        print(f"validate one --profile health ({name}): rc={code}, wall {secs:.1f} s")
        worst = max(worst, code)
    (out / "commands.txt").write_text("\n".join(log) + "\n")
    return worst


if __name__ == "__main__":
    sys.exit(main())
