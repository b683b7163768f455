"""Every node's processes judged (issue 40 req 2): two loopback hosts with their own roots, a healthy
``validate``, then the same with node2's patched file put back to upstream's after migrate.

Two ssh destinations on one machine (node1 at 127.0.0.2, node2 at 127.0.0.3), each with one GPU
(``CUDA_VISIBLE_DEVICES`` "0" and "1") and its own tree (``.../hosts/node1/verl_Uky`` and
``.../hosts/node2/verl_Uky``): ``patchctl migrate two``, ``patchctl validate two`` (expected PASS,
``patched_code.hosts`` listing each node's processes, each importing its own tree), then node2's
patched module restored to the tree's committed (upstream) bytes at the same path and validate
again (expected FAIL by ``patched-code-ran``, naming node2). Prints one table and writes
``summary.json``; ``--out`` receives each run's report.json, validate.json and the commands.

CPU (default): the stand-in verl of tests/validate with a one-line code patch (the ``mark``
patchset below) and a stub nvidia-smi. GPU (nvidia-h200-x2), from the repository root with sshd
and rsync unpacked (docs/validation/vllm-smoke/run_gpu.sh nodes)::

    python benchmarks/validate_nodes.py --tree /tmp/w/verl-0.9.1 --out OUT --profile smoke-vllm \\
        --env PYTHONPATH=/tmp/vsite --env RAY_memory_monitor_refresh_ms=0
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "migrate"))

from sshd_harness import missing_tools, workspace

from bench_validate import CPU_SKIP, config, host, patchctl, tree_and_env

MARK = """[patchset]
name = "mark"
tag = "Mark"

[[patch]]
id = "mark-prelude"
title = "A marker block in the module the stand-in's Ray task imports"
why = "benchmark: the block must be seen running in a Ray worker of each node"
kind = "prelude"
target = ["verl/utils/standin_mark.py"]

[patch.params]
block = '''
MARKED = True  # Mark'''

[patch.upstream]
kind = "none"
"""


def _patch_standin(tree: Path, work: Path, log: list[str]) -> None:
    ps = work / "mark-ps"
    ps.mkdir(exist_ok=True)
    (ps / "patchset.toml").write_text(MARK)
    code, _, text = patchctl(["apply", "--target", str(tree), "--patchset", str(ps), "--commit"], log, work)
    if code:
        raise SystemExit(f"apply on the stand-in failed: {text[-2000:]}")


def _code_patch(tree: Path, wanted: str | None) -> str:
    """The tree-relative path of the code patch to revert on node2 (unless named: a package's
    ``__init__`` where a patch edits one, else the first)."""
    if wanted:
        return wanted
    record = json.loads((tree / ".patchctl" / "applied.json").read_text())
    code = [
        str(e["path"])
        for e in record.get("patches", [])
        if e.get("path", "").startswith("verl/") and e["path"].endswith(".py") and e.get("kind") != "add-file"
    ]
    # a package's __init__ first: every process that imports anything of the package runs it
    code.sort(key=lambda p: not p.endswith("/__init__.py"))
    if not code:
        raise SystemExit(f"{tree}: no code patch in .patchctl/applied.json")
    return code[0]


def _upstream(tree: Path, rel: str) -> bytes:
    """The file as committed before the patches were applied (HEAD without --commit, else HEAD~)."""
    for rev in ("HEAD", "HEAD~1"):
        done = subprocess.run(["git", "-C", str(tree), "show", f"{rev}:{rel}"], capture_output=True)
        if done.returncode == 0 and done.stdout != (tree / rel).read_bytes():
            return done.stdout
    raise SystemExit(f"{tree}: no committed upstream copy of {rel} that differs from the patched file")


#: NODESxGPUS -> the loopback hosts: (name, address, CUDA_VISIBLE_DEVICES, GPUs)
LAYOUTS = {
    "2x1": (("node1", "127.0.0.2", "0", 1), ("node2", "127.0.0.3", "1", 1)),
    "1x2": (("node1", "127.0.0.2", "0,1", 2),),
    "2x2": (("node1", "127.0.0.2", "0,1", 2), ("node2", "127.0.0.3", "2,3", 2)),
}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tree", type=Path, help="a patched verl tree (GPU mode); default: the CPU stand-in")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--env", action="append", default=[], help="K=V for the cluster env")
    ap.add_argument("--profile", default="smoke")
    ap.add_argument("--skip", action="append", default=[], help="a verify --env check to leave out")
    ap.add_argument("--timeout", default="420", help="validate's --timeout (seconds)")
    ap.add_argument("--revert", help="the tree-relative file to revert on node2 (default: the first code patch's)")
    ap.add_argument("--only", choices=("healthy", "reverted"), help="run one of the two")
    ap.add_argument(
        "--layout",
        choices=tuple(LAYOUTS),
        default="2x1",
        help="NODESxGPUS: 2x1 (default), 1x2 (one host, two GPUs) or 2x2 (nvidia-h200-x4)",
    )
    ap.add_argument("--override", action="append", default=[], help="a hydra override for validate")
    args = ap.parse_args()
    why = missing_tools()
    if why:
        print(f"cannot run: {why}")
        return 2
    cpu = args.tree is None
    with workspace("pcv-nodes-", args.out) as ws:
        work, out, roots = ws.work, ws.out, ws.roots
        tree, env = tree_and_env(work, args.tree, args.env)
        log: list[str] = []
        if cpu:
            _patch_standin(tree, work, log)
        rel = _code_patch(tree, args.revert)
        cfg = out / "patchctl.toml"
        two = [host(name, addr, roots[name], cvd, gpus, {}) for name, addr, cvd, gpus in LAYOUTS[args.layout]]
        config(cfg, ws.loop, {"two": two}, env, (CPU_SKIP if cpu else []) + args.skip)
        marks = ["--patchset", str(work / "mark-ps")] if cpu else []
        code, secs, text = patchctl(["migrate", "two", "--target", str(tree), "--config", str(cfg), *marks], log, work)
        print(f"migrate two: rc={code} in {secs:.1f} s")
        if code:
            print(text[-3000:])
            return 1
        rows = []
        for name in ("healthy", "reverted"):
            if args.only and name != args.only:
                continue
            if name == "reverted":
                (roots["node2"] / rel).write_bytes(_upstream(tree, rel))
                print(f"node2: {rel} put back to upstream's bytes after migrate (node1's stays patched)")
            run_dir = out / name
            shutil.rmtree(run_dir, ignore_errors=True)
            argv = ["validate", "two", "--profile", args.profile, "--config", str(cfg), "--out", str(run_dir)]
            code, secs, text = patchctl([*argv, "--timeout", args.timeout, *args.override], log, work)
            (out / f"validate-{name}.txt").write_text(text)
            doc = json.loads((run_dir / "validate.json").read_text()) if (run_dir / "validate.json").exists() else {}
            gate = next((g for g in (doc.get("trained") or {}).get("gates", []) if g["name"] == "patched-code-ran"), {})
            report = run_dir / "report.json"
            hosts = (
                (json.loads(report.read_text()).get("patched_code") or {}).get("hosts", []) if report.exists() else []
            )
            listing = {
                h["host"]: [
                    f"{p['pid']} {p['role']} "
                    + ",".join(
                        f"{m.rsplit('.', 1)[-1]}:{'own' if i['own_tree'] else 'OTHER'}"
                        f"/{'as-migrated' if i['as_migrated'] else ('-' if i['as_migrated'] is None else 'CHANGED')}"
                        for m, i in p["imports"].items()
                    )
                    for p in h["processes"]
                ]
                for h in hosts
            }
            rows.append(
                {
                    "run": name,
                    "rc": code,
                    "wall_s": round(secs, 1),
                    "verdict": doc.get("verdict"),
                    "cause": doc.get("cause", ""),
                    "gate": {k: gate.get(k) for k in ("status", "value", "reason")},
                    "processes": listing,
                    "timings": doc.get("timings"),
                }
            )
            verdict = f"verdict {doc.get('verdict')} {doc.get('cause', '')}"
            print(f"validate two ({name}): rc={code}, wall {secs:.1f} s, {verdict}")
            print(f"  patched-code-ran: {gate.get('status')} - {gate.get('reason')}")
            for g in (doc.get("trained") or {}).get("gates", []):
                if g["name"] == "weights-match":
                    print(f"  weights-match: {g['status']} - {g['reason']}")
            for label, procs in listing.items():
                print(f"  {label}: {len(procs)} processes")
                for line in procs:
                    print(f"    {line}")
        (out / "commands.txt").write_text("\n".join(log) + "\n")
        (out / "summary.json").write_text(json.dumps(rows, indent=2) + "\n")
        want = {"healthy": ("pass", 0), "reverted": ("fail", 1)}
        ok = all(
            (r["verdict"], r["rc"]) == want[r["run"]] and r["gate"].get("status") == want[r["run"]][0] for r in rows
        )
        print("\nexpected: healthy PASS, reverted FAIL by patched-code-ran:", "met" if ok else "NOT met")
        return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
