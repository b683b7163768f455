"""migrate's source pass alone, this checkout's beside a baseline's, on trees of small files.

What a first migrate does here before the hosts can be verified: the hash cache loaded (cold),
the file set (git's listing, a stat and an entry per file, every file hashed) and the tag
inventory the hosts are checked against. Each run is a fresh process of one version (``src/``
of this checkout or of ``--baseline``, unpacked from git), the two taking turns run by run so
that a change of load hits both alike; its wall and CPU seconds are those of the pass alone,
measured inside the process (imports excluded). Medians of ``--runs``.

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


def make_tree(root: Path, n: int) -> None:
    """A git repository with ``n`` untracked small files in folders of 100 (one in 100 tagged)."""
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    for i in range(n):
        folder = root / f"pkg{i // 100:04d}"
        folder.mkdir(exist_ok=True)
        line = f"v{i} = '{hashlib.sha256(str(i).encode()).hexdigest()}'" + ("  # Uky\n" if i % 100 == 0 else "\n")
        (folder / f"m{i % 100:03d}.py").write_text(line * 40)


def one(src: Path, root: Path) -> list[float]:
    """One cold pass of the patchctl under ``src``: wall s, CPU s, files, tagged lines."""
    with tempfile.TemporaryDirectory() as home:
        env = dict(os.environ, PYTHONPATH=str(src))
        argv = [sys.executable, "-c", SOURCE_RUN, str(root), home]
        out = subprocess.run(argv, env=env, capture_output=True, text=True)
        if out.returncode:
            raise SystemExit(out.stderr)
        row: list[float] = json.loads(out.stdout)
        return row


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", default="10k,100k")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--baseline", default="main")
    args = ap.parse_args()
    here = Path(__file__).resolve().parents[1] / "src"
    print(f"migrate's cold source pass, this checkout vs {args.baseline}; median of {args.runs} run(s), taking turns")
    print("| files | baseline wall / CPU s | this wall / CPU s | ratio wall / CPU | tagged lines (both) |")
    print("|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        base = baseline_src(args.baseline, Path(tmp) / "base")
        for key in args.sizes.split(","):
            root = Path(tmp) / key
            make_tree(root, SIZES[key])
            rows: dict[str, list[list[float]]] = {"base": [], "this": []}
            for _ in range(args.runs):
                rows["base"].append(one(base, root))
                rows["this"].append(one(here, root))
            med = {k: [statistics.median(r[i] for r in v) for i in range(2)] for k, v in rows.items()}
            tags = {int(r[3]) for v in rows.values() for r in v}
            assert len(tags) == 1, f"the two versions found different tagged lines: {tags}"
            b, t = med["base"], med["this"]
            print(
                f"| {SIZES[key]:,} | {b[0]:.2f} / {b[1]:.2f} | {t[0]:.2f} / {t[1]:.2f} "
                f"| {t[0] / b[0]:.2f}x / {t[1] / b[1]:.2f}x | {tags.pop()} |"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
