"""Cold-process `patchctl apply` / `patchctl verify` on verl 0.6.1, beside git apply and grep.

Each figure is the median wall time of N fresh processes (default 7), the commands interleaved so
a change of machine load hits every column alike. Before each apply run the tree is reset to the
pristine release (not timed). The baselines do the same job the dumb way: `git apply` of the very
diff patchctl writes, and `grep -rn "# Uky"` over the same tree. `--baseline REF` also runs the
patchctl of another commit (a git worktree of this repository) side by side: the before/after of a
start-up change in one run. The modules column counts what one run loads (a figure a loaded
machine does not blur). ``--instructions`` adds another: the instructions one run executes, counted
by valgrind's callgrind (the patchctl process only), which two cores shared by a dozen busy
processes change no more than the modules (wall and CPU seconds they double). The last tables are
`python -X importtime`'s largest imports of one apply and of one verify.

    python benchmarks/bench_core.py [--runs N] [--version 0.6.1] [--baseline REF] [--instructions]
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from patchctl import releases

ROOT = Path(__file__).resolve().parent.parent
#: the goals of issue 39, on an idle 2-core machine
GOALS = {"apply": 0.25, "verify": 0.12}
#: command -> (wall, cpu) seconds of each run
Rows = dict[str, list[tuple[float, float]]]


def timed(argv: list[str], env: dict[str, str] | None = None) -> tuple[float, float]:
    """Wall and CPU (user + system) seconds of one run: on a loaded machine the wall time mostly
    measures the load, the CPU time what the command itself costs."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def reset(tree: Path) -> None:
    subprocess.run(["git", "-C", str(tree), "checkout", "-q", "--", "."], check=True)
    subprocess.run(["git", "-C", str(tree), "clean", "-qfdx"], check=True)


def patchctl_env(src: Path) -> dict[str, str]:
    """The environment that runs the patchctl of ``src`` (its sources first on the path)."""
    return {**os.environ, "PYTHONPATH": str(src), "PYTHONDONTWRITEBYTECODE": ""}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--version", default="0.6.1")
    ap.add_argument("--baseline", default=None, help="a commit of this repository to run beside the working tree")
    ap.add_argument("--instructions", action="store_true", help="also count one run's instructions (valgrind)")
    args = ap.parse_args()
    cmd = [sys.executable, "-m", "patchctl"]
    with tempfile.TemporaryDirectory() as tmp:
        builds = {"": ROOT / "src"}
        if args.baseline:
            old = Path(tmp) / "baseline"
            subprocess.run(
                ["git", "-C", str(ROOT), "worktree", "add", "-q", "--detach", str(old), args.baseline], check=True
            )
            builds[f" @{args.baseline[:10]}"] = old / "src"
        try:
            rows = _measure(Path(tmp), cmd, builds, args)
            counts = {
                f"patchctl {verb}{suffix}": _modules(Path(tmp), src, verb, args.version)
                for suffix, src in builds.items()
                for verb in ("apply", "verify")
            }
            instructions = (
                {
                    f"patchctl {verb}{suffix}": _instructions(Path(tmp), src, verb, args.version)
                    for suffix, src in builds.items()
                    for verb in ("apply", "verify")
                }
                if args.instructions
                else {}
            )
            importtime = {verb: _importtime(Path(tmp), cmd, builds[""], args.version, verb) for verb in GOALS}
        finally:
            if args.baseline:
                subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(old)], check=False)
    med = {k: statistics.median(w for w, _ in v) for k, v in rows.items()}
    cpu = {k: statistics.median(c for _, c in v) for k, v in rows.items()}
    load = os.getloadavg()[0]
    print(f"verl {args.version}, median of {args.runs} cold processes, interleaved (load average {load:.1f})")
    print(
        f"{'command':<30}{'wall s':>8}{'min s':>8}{'cpu s':>8}{'modules':>9}{'M instr':>9}"
        f"{'vs baseline':>13}{'goal (wall)':>13}"
    )
    for name in rows:
        base = "git apply" if "apply" in name else "grep -rn"
        verb = "apply" if "apply" in name else "verify"
        ratio = f"{med[name] / med[base]:.1f}x" if name.startswith("patchctl") else "-"
        goal = f"<= {GOALS[verb]:.2f}" if name == f"patchctl {verb}" else ""
        fastest = min(w for w, _ in rows[name])
        mods = str(counts.get(name, "-"))
        ins = f"{instructions[name] / 1e6:.0f}" if name in instructions else "-"
        print(f"{name:<30}{med[name]:>8.3f}{fastest:>8.3f}{cpu[name]:>8.3f}{mods:>9}{ins:>9}{ratio:>13}{goal:>13}")
    for verb, found in importtime.items():
        print(f"\nlargest imports of one `patchctl {verb}` (python -X importtime, cumulative us)")
        for us, name in found:
            print(f"{us:>10}  {name}")
    return 0


def _measure(tmp: Path, cmd: list[str], builds: dict[str, Path], args: argparse.Namespace) -> Rows:
    tree = tmp / "verl"
    shutil.copytree(releases.materialize(args.version), tree, symlinks=True)
    reset(tree)
    patch_file = tmp / "uky.diff"
    # the unified diff of the same change, as git apply takes it
    out = subprocess.run(
        [*cmd, "apply", "--target", str(tree), "--dry-run", "--diff"],
        capture_output=True,
        text=True,
        env=patchctl_env(builds[""]),
        check=False,
    )
    patch_file.write_text(_diff_only(out.stdout))
    rows: Rows = {}
    for suffix in builds:
        rows[f"patchctl apply{suffix}"] = []
    rows["git apply"] = []
    for suffix in builds:
        rows[f"patchctl verify{suffix}"] = []
    rows["grep -rn"] = []
    for _ in range(args.runs):
        reset(tree)
        rows["git apply"].append(timed(["git", "-C", str(tree), "apply", str(patch_file)]))
        for suffix, src in builds.items():
            reset(tree)
            argv = [*cmd, "apply", "--target", str(tree), "--force", "--json"]
            rows[f"patchctl apply{suffix}"].append(timed(argv, patchctl_env(src)))
    for _ in range(args.runs):
        for suffix, src in builds.items():
            argv = [*cmd, "verify", "--target", str(tree), "--json"]
            rows[f"patchctl verify{suffix}"].append(timed(argv, patchctl_env(src)))
        rows["grep -rn"].append(timed(["grep", "-rn", "# Uky", str(tree)]))
    return rows


#: runs ``python -m patchctl ARGS`` and, as the interpreter exits, writes how many modules it had
#: loaded to the file the first argument names (tests/cli/test_startup_imports.py does the same)
MODULES_DRIVER = """
import atexit, runpy, sys
out = sys.argv.pop(1)
atexit.register(lambda: open(out, "w").write(str(len(sys.modules))))
sys.argv[0] = "patchctl"
runpy.run_module("patchctl", run_name="__main__", alter_sys=True)
"""


def _modules(tmp: Path, src: Path, verb: str, version: str) -> int:
    """The modules one ``patchctl VERB --json`` of ``src`` loads, on a fresh tree (apply's) or an
    applied one (verify's): the figure a loaded machine does not blur."""
    tree = _applied(tmp, src, verb, version, "verl-modules")
    out = tmp / "modules.txt"
    subprocess.run(
        [sys.executable, "-c", MODULES_DRIVER, str(out), verb, "--target", str(tree), "--json"],
        env=patchctl_env(src),
        capture_output=True,
        check=False,
    )
    return int(out.read_text())


def _applied(tmp: Path, src: Path, verb: str, version: str, name: str) -> Path:
    """A tree for one ``patchctl VERB``: the pristine release for apply, uky applied for verify."""
    tree = tmp / name
    if not tree.exists():
        shutil.copytree(releases.materialize(version), tree, symlinks=True)
    reset(tree)
    if verb == "verify":
        apply = [sys.executable, "-m", "patchctl", "apply", "--target", str(tree)]
        subprocess.run(apply, env=patchctl_env(src), capture_output=True, check=True)
    return tree


#: valgrind counting instructions, writing no profile
CALLGRIND = ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null"]


def _instructions(tmp: Path, src: Path, verb: str, version: str) -> int:
    """The instructions one ``patchctl VERB --json`` of ``src`` executes (callgrind's count)."""
    tree = _applied(tmp, src, verb, version, "verl-instructions")
    done = subprocess.run(
        [*CALLGRIND, sys.executable, "-m", "patchctl", verb, "--target", str(tree), "--json"],
        env=patchctl_env(src),
        capture_output=True,
        text=True,
        check=False,
    )
    found = re.search(r"Collected : (\d+)", done.stderr)
    if found is None:
        raise SystemExit(f"valgrind counted nothing: {done.stderr[-500:]}")
    return int(found.group(1))


def _importtime(tmp: Path, cmd: list[str], src: Path, version: str, verb: str) -> list[tuple[int, str]]:
    """The eight largest top-level imports (cumulative microseconds) of one apply on a fresh tree,
    or of one verify of an applied one."""
    tree = _applied(tmp, src, verb, version, "verl-importtime")
    done = subprocess.run(
        [cmd[0], "-X", "importtime", *cmd[1:], verb, "--target", str(tree), "--json"],
        capture_output=True,
        text=True,
        env=patchctl_env(src),
        check=False,
    )
    found = []
    for line in done.stderr.splitlines():
        m = re.match(r"import time:\s+\d+ \|\s+(\d+) \| (\S.*)$", line)
        if m and not m.group(2).startswith(" "):
            found.append((int(m.group(1)), m.group(2)))
    return sorted(found, reverse=True)[:8]


def _diff_only(text: str) -> str:
    """Keep the unified diff that precedes the results table."""
    lines = text.splitlines(keepends=True)
    end = next((i for i, ln in enumerate(lines) if ln.startswith("apply ")), len(lines))
    return "".join(lines[:end])


if __name__ == "__main__":
    sys.exit(main())
