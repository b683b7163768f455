"""A verl tree run through a formatter, for ``bench_forks.py``'s ``fmt`` column (issue 38.3).

Upstream reformats its code from time to time (verl moved from yapf to ruff); a formatter turns
a backslash continuation into brackets, wraps or joins long lines, collapses a short docstring
onto one line, adds trailing commas. None of that changes the syntax tree, so none of it may
change what patchctl does: the column counts the patches whose outcome on the formatted tree
differs from the outcome on the tree as released.

Both formatters run with their own defaults (line length 88), not the tree's configuration:
upstream's own settings may already match the code and so test nothing, while the defaults
re-wrap most long statements. Files a formatter cannot parse are left as they are.

Run alone, it measures that column only, with ``bench_forks``' own code (its capture, its
``fmt_diffs``), without the git side and the timings (``results/forks_format.md`` holds the
last measurement, with its before and after):

    python benchmarks/forks_format.py [--forks TinyZero,...] [--versions base,v0.2.0.post2,...]
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import time
from pathlib import Path

TOOLS = ("ruff", "black")


def formatted(tree: Path, tool: str, dest: Path, files: list[str]) -> Path:
    """A copy of ``tree`` at ``dest`` with ``files`` (those the patchset changes) formatted by
    ``tool`` where they are Python (cached: ``dest`` is kept)."""
    if dest.is_dir():
        return dest
    tmp = dest.with_name(dest.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    shutil.copytree(tree, tmp, symlinks=True, ignore=shutil.ignore_patterns(".git"))
    bin_dir = Path(sys.executable).parent
    py = sorted({f for f in files if f.endswith(".py") and (tmp / f).is_file()})
    if tool == "ruff":
        argv = [str(bin_dir / "ruff"), "format", "--isolated", "--quiet"]
    else:
        empty = tmp.parent / "black-defaults.toml"
        empty.write_text("", encoding="utf-8")
        argv = [str(bin_dir / "black"), "--quiet", "--config", str(empty)]
    if py:
        subprocess.run([*argv, *py], cwd=tmp, capture_output=True, check=False)  # unparsable files stay as they are
    tmp.rename(dest)
    return dest


def main() -> None:
    import bench_forks as bf
    import forks_setup as fs
    from patchctl.capture.run import capture
    from patchctl.patchsets.loader import load_patchset

    ap = argparse.ArgumentParser(description="bench_forks' fmt column alone")
    ap.add_argument("--forks", default=",".join(bf.FORKS))
    ap.add_argument("--versions", default="base," + bf.VERSIONS)
    ap.add_argument("--mirrors", type=Path, default=Path("/work/.mirror"))
    ap.add_argument("--work", type=Path, default=Path.home() / ".cache" / "patchctl-bench" / "forks-format")
    ap.add_argument("--out", type=Path, help="also write the table here")
    args = ap.parse_args()
    verl_git = args.mirrors / "volcengine+verl" / "repo"
    versions = args.versions.split(",")
    rows, log = [], []
    for name in args.forks.split(","):
        fork_git = args.mirrors / bf.FORKS[name] / "repo"
        base_rev, _ = fs.find_base(fork_git, verl_git)
        w = args.work / name
        fork = fs.export(fork_git, "HEAD", w / "fork")
        base = fs.export(verl_git, base_rev, w / f"base-{base_rev[:12]}")
        shutil.rmtree(w / "patchset", ignore_errors=True)
        capture(fork, str(base), w / "patchset", all_=True, name=name.lower())
        ps = load_patchset(w / "patchset")
        row: dict[str, object] = {"fork": name, "patches": len(ps.patches)}
        for v in versions:
            tree = base if v == "base" else fs.version_tree(v, verl_git, args.work)
            t0 = time.process_time()
            row[v] = bf.fmt_diffs(ps, tree, v, bf.outcomes(ps, tree, v), w, log)
            print(f"{name} {v}: {row[v]} ({time.process_time() - t0:.1f} s CPU)", flush=True)
        rows.append(row)
    text = (
        "patches whose outcome differs on the version run through ruff format / black "
        "(every patch of each fork counted)\n\n" + bf.table(rows) + "\n"
    )
    text += "".join(f"\n    {line}" for line in log) + ("\n" if log else "")
    print(text)
    if args.out:
        args.out.write_text(text, encoding="utf-8")


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    main()
