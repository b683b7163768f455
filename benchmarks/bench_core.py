"""Cold-process `patchctl apply` / `patchctl verify` on verl 0.6.1, beside git apply and grep.

Each figure is the median wall time of N fresh processes (default 7). Before each apply run the
tree is reset to the pristine release (not timed). The baselines do the same job the dumb way:
`git apply` of the very diff patchctl writes, and `grep -rn "# Uky"` over the same tree.

    python benchmarks/bench_core.py [--runs N] [--version 0.6.1]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from patchctl import releases


def timed(argv: list[str], cwd: Path | None = None) -> float:
    start = time.perf_counter()
    subprocess.run(argv, cwd=cwd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def reset(tree: Path) -> None:
    subprocess.run(["git", "-C", str(tree), "checkout", "-q", "--", "."], check=True)
    subprocess.run(["git", "-C", str(tree), "clean", "-qfdx"], check=True)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--version", default="0.6.1")
    args = ap.parse_args()
    patchctl = str(Path(sys.executable).with_name("patchctl"))
    with tempfile.TemporaryDirectory() as tmp:
        tree = Path(tmp) / "verl"
        shutil.copytree(releases.materialize(args.version), tree, symlinks=True)
        reset(tree)
        patch_file = Path(tmp) / "uky.diff"
        # the unified diff of the same change, as git apply takes it
        out = subprocess.run([patchctl, "apply", "--target", str(tree), "--dry-run"], capture_output=True, text=True)
        patch_file.write_text(_diff_only(out.stdout))
        rows: dict[str, list[float]] = {k: [] for k in ("patchctl apply", "git apply", "patchctl verify", "grep -rn")}
        for _ in range(args.runs):
            reset(tree)
            rows["git apply"].append(timed(["git", "-C", str(tree), "apply", str(patch_file)]))
            reset(tree)
            rows["patchctl apply"].append(timed([patchctl, "apply", "--target", str(tree), "--force", "--json"]))
        for _ in range(args.runs):
            rows["patchctl verify"].append(timed([patchctl, "verify", "--target", str(tree), "--json"]))
            rows["grep -rn"].append(timed(["grep", "-rn", "# Uky", str(tree)]))
    med = {k: statistics.median(v) for k, v in rows.items()}
    print(f"verl {args.version}, median of {args.runs} cold processes")
    print(f"{'command':<18}{'median s':>10}{'min s':>9}{'vs baseline':>13}{'goal':>8}")
    for name, base, goal in (
        ("patchctl apply", "git apply", 0.5),
        ("git apply", None, None),
        ("patchctl verify", "grep -rn", 0.5),
        ("grep -rn", None, None),
    ):
        ratio = f"{med[name] / med[base]:.1f}x" if base else "-"
        print(f"{name:<18}{med[name]:>10.3f}{min(rows[name]):>9.3f}{ratio:>13}{f'<= {goal:.1f}' if goal else '':>8}")
    return 0


def _diff_only(text: str) -> str:
    """Keep the unified diff that precedes the results table."""
    lines = text.splitlines(keepends=True)
    end = next((i for i, ln in enumerate(lines) if ln.startswith("apply ")), len(lines))
    return "".join(lines[:end])


if __name__ == "__main__":
    sys.exit(main())
