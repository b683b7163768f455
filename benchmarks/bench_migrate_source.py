"""migrate's source side alone, this checkout's beside a baseline's, on trees of small files.

Three passes per tree size:

- cold: what a first migrate does here before the hosts can be verified: the hash cache loaded
  (cold), the file set (git's listing, a stat and an entry per file, every file hashed) and the
  tag inventory the hosts are checked against;
- first prepare: ``prepare.prepare`` of a tree never prepared (all of the above, the manifest,
  the provenance, the hash cache and the seal written), as a first migrate runs it;
- sealed: ``prepare.prepare`` of the same tree again, unchanged: git's listing, the walk and the
  seal, which hands the hosts the summary (what a no-change re-run does here).

Each run is a fresh process of one version (``src/`` of this checkout or of ``--baseline``,
unpacked from git), the two taking turns run by run so that a change of load hits both alike;
its wall and CPU seconds are those of the pass alone, measured inside the process (imports
excluded), its peak RSS the process's (VmHWM, imports included). Medians of ``--runs``.

    python benchmarks/bench_migrate_source.py [--sizes 10k,100k] [--runs 3] [--baseline main]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench_migrate_agent import baseline_src

SIZES = {"10k": 10_000, "100k": 100_000}

#: one cold source pass, as migrate's prepare makes it, timed in the process
SOURCE_RUN = """
import json, sys, time
from pathlib import Path
from patchctl.clusters import load_cluster
from patchctl.migrate import fileset, hashcache, state, verify_remote
root, home = Path(sys.argv[1]), Path(sys.argv[2])
state.state_dir = lambda: home  # a cold cache, never the user's
cfg = home / "c.toml"
cfg.write_text('[clusters.c]\\nhosts = ["n1"]\\nroot = "/r"\\n')
cluster = load_cluster("c", cfg)
rule = verify_remote.tag_rule({"Uky"})
began, cpu = time.monotonic(), time.process_time()
cache = hashcache.load(root, rule, True)
fs = fileset.collect(root, cluster, (), cache)
tags = verify_remote.tags_request(fs, rule, (), cache)
print(json.dumps([time.monotonic() - began, time.process_time() - cpu, len(fs.entries), len(tags["expected"])]))
"""

#: one preparation as migrate's runner calls it; "sealed" (argv[3]): of a tree prepared before,
#: in the same home, whose seal must then settle every host
PREPARE_RUN = """
import json, sys, time
from pathlib import Path
from patchctl.clusters import load_cluster
from patchctl.migrate import Options, state
from patchctl.migrate.prepare import Pending, prepare
root, home, sealed = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3] == "sealed"
state.state_dir = lambda: home
cfg = home / "c.toml"
cfg.write_text('[clusters.c]\\nhosts = ["n1"]\\nroot = "/r"\\n')
pending = Pending(load_cluster("c", cfg), root, Options())
began, cpu = time.monotonic(), time.process_time()
tree = prepare(root, (), (), home, pending, needed=lambda: not sealed)
wall, cpu = time.monotonic() - began, time.process_time() - cpu
assert (tree is None) == sealed, "the seal did not settle an unchanged tree" if sealed else "no tree"
print(json.dumps([wall, cpu, pending.summary.result().files, 0]))
"""
#: appended to each run: the process's peak RSS in MB
PEAK = """
hwm = [line for line in open("/proc/self/status") if line.startswith("VmHWM:")][0].split()[1]
print(json.dumps(int(hwm) / 1024))
"""
PASSES = {"cold": SOURCE_RUN, "first prepare": PREPARE_RUN, "sealed": PREPARE_RUN}


def make_tree(root: Path, n: int) -> None:
    """A git repository with ``n`` untracked small files in folders of 100 (one in 100 tagged)."""
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    for i in range(n):
        folder = root / f"pkg{i // 100:04d}"
        folder.mkdir(exist_ok=True)
        line = f"v{i} = '{hashlib.sha256(str(i).encode()).hexdigest()}'" + ("  # Uky\n" if i % 100 == 0 else "\n")
        (folder / f"m{i % 100:03d}.py").write_text(line * 40)


def one(src: Path, root: Path, home: Path, kind: str) -> list[float]:
    """One pass of the patchctl under ``src`` with its state in ``home``: wall s, CPU s, files,
    tagged lines (cold only), peak RSS MB."""
    env = dict(os.environ, PYTHONPATH=str(src))
    argv = [sys.executable, "-c", PASSES[kind] + PEAK, str(root), str(home), kind]
    out = subprocess.run(argv, env=env, capture_output=True, text=True)
    if out.returncode:
        raise SystemExit(out.stderr)
    row, peak = out.stdout.splitlines()
    return [*json.loads(row), json.loads(peak)]


def run_both(base: Path, here: Path, root: Path, runs: int) -> dict[str, dict[str, list[list[float]]]]:
    """Every pass ``runs`` times per version, taking turns; each round's sealed pass in the home
    of its first prepare (each version keeps its own seal)."""
    rows: dict[str, dict[str, list[list[float]]]] = {k: {"base": [], "this": []} for k in PASSES}
    for _ in range(runs):
        for version, src in (("base", base), ("this", here)):
            with tempfile.TemporaryDirectory() as cold, tempfile.TemporaryDirectory() as home:
                rows["cold"][version].append(one(src, root, Path(cold), "cold"))
                for kind in ("first prepare", "sealed"):
                    rows[kind][version].append(one(src, root, Path(home), kind))
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", default="10k,100k")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--baseline", default="main")
    args = ap.parse_args()
    here = Path(__file__).resolve().parents[1] / "src"
    print(f"migrate's source side, this checkout vs {args.baseline}; median of {args.runs} run(s), taking turns")
    print("| files | pass | baseline wall / CPU s | this wall / CPU s | ratio wall / CPU | peak RSS MB, base / this |")
    print("|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        base = baseline_src(args.baseline, Path(tmp) / "base")
        for key in args.sizes.split(","):
            root = Path(tmp) / key
            make_tree(root, SIZES[key])
            time.sleep(0.05)  # the tree older than the first prepare's clock: its seal may be kept
            rows = run_both(base, here, root, args.runs)
            tags = {int(r[3]) for v in rows["cold"].values() for r in v}
            assert len(tags) == 1, f"the two versions found different tagged lines: {tags}"
            for kind, by in rows.items():
                assert {int(r[2]) for v in by.values() for r in v} == {SIZES[key]}, f"{kind}: files missed"
                b, t = ([statistics.median(r[i] for r in by[v]) for i in (0, 1, 4)] for v in ("base", "this"))
                print(
                    f"| {SIZES[key]:,} | {kind} | {b[0]:.3f} / {b[1]:.3f} | {t[0]:.3f} / {t[1]:.3f} "
                    f"| {t[0] / b[0]:.2f}x / {t[1] / b[1]:.2f}x | {b[2]:.0f} / {t[2]:.0f} |"
                )
    return 0


if __name__ == "__main__":
    sys.exit(main())
