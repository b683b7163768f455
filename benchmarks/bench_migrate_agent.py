"""migrate's host agent alone, this checkout's beside a baseline's, on trees of small files.

`bench_migrate.py` measures a whole migrate beside rsync; on a shared machine of few cores its
rows move by 2x with the load, more than the host's share of a run. This times only what each
host does, the two versions taking turns run by run, so a change of load hits both alike:

- first: the check after a first transfer (no cache on the host, no prescan): every file read;
- again: a no-change re-run's check: the prescan order, a pause while the source would be
  listed and hashed, then the request (a 100k manifest is ~12 MB of JSON);
- sealed: a no-change re-run answered by the host's seal (agent_seal; a version without it is
  shown as "-"): the prescan order with ``"seal": true`` sent once the process has started, the
  seconds until its one-line answer, then EOF. Every request carries ``seal_as``, so "first" and
  "again" include writing the seal.

Each is one agent process as ssh starts it there (``python3 -I -S -c``, the request on stdin):
the wall seconds from the request sent to the reply read, and the process's CPU seconds (wait4;
with the prescan's, for "again"). Medians of ``--runs``.

    python benchmarks/bench_migrate_agent.py [--sizes 10k,100k] [--runs 3] [--baseline main]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from io import BytesIO
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
RULE = [r"#\s*(Uky)\b", ["Uky"]]
SIZES = {"10k": 10_000, "100k": 100_000}
PAUSE = {"10k": 0.5, "100k": 2.5}  # about the source's file set before the request (bench_migrate)


def agent_program(src: Path) -> str:
    """The base64 agent program of the patchctl under ``src``, and the bootstrap ssh runs it with."""
    code = "from patchctl.migrate import verify_remote; from patchctl.remote import ssh; "
    code += "print(ssh._BOOTSTRAP.format(code=verify_remote._agent_b64()))"
    env = dict(os.environ, PYTHONPATH=str(src))
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout


def baseline_src(rev: str, into: Path) -> Path:
    """``src/`` as of the git revision ``rev``, unpacked under ``into``."""
    tar = subprocess.run(["git", "-C", str(REPO), "archive", rev, "src"], capture_output=True, check=True).stdout
    with tarfile.open(fileobj=BytesIO(tar)) as t:
        t.extractall(into, filter="data")
    return into / "src"


def tree(root: Path, n: int) -> bytes:
    """``n`` small files in folders of 100 (one in 500 with a tagged line); the request for them."""
    manifest, expected = [], []
    for i in range(n):
        rel = f"pkg{i // 100:04d}/m{i % 100:03d}.py"
        data = f"value = {i}\n".encode() + (b"x = 1  # Uky\n" if i % 500 == 0 else b"")
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(data)
        manifest.append([rel, "f", hashlib.sha256(data).hexdigest(), False])
        if i % 500 == 0:
            expected.append([rel, 2, "x = 1  # Uky"])
    time.sleep(0.1)  # past the file-system clock's tick: the files can be remembered
    request = {
        "root": str(root),
        "action": "finish",
        "manifest": manifest,
        "rendered": {},
        "delete": False,
        "max_delete": 0,
        "tags": {"pattern": RULE[0], "needles": RULE[1], "expected": expected},
        "provenance": {"commit": "bench"},
        "seal_as": "bench",
    }
    return json.dumps(request, separators=(",", ":")).encode()


def check(program: str, root: Path, request: bytes, pause: float | None) -> tuple[float, float]:
    """One agent process: the prescan order and ``pause`` seconds first unless ``pause`` is None;
    (wall seconds from the request to the reply, the process's CPU seconds)."""
    p = subprocess.Popen(["python3", "-I", "-S", "-c", program], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert p.stdin is not None and p.stdout is not None
    if pause is not None:
        p.stdin.write(json.dumps({"prescan": {"root": str(root), "rule": RULE, "rehash": False}}).encode() + b"\n")
        p.stdin.flush()
        time.sleep(pause)
    began = time.perf_counter()
    p.stdin.write(request)
    p.stdin.close()
    out = p.stdout.read()
    wall = time.perf_counter() - began
    _, status, usage = os.wait4(p.pid, 0)
    reply = json.loads(out)
    bad = reply.get("error") or reply["problems"] or reply["tags_only_here"] or reply["tags_missing_here"]
    if status != 0 or bad:
        raise SystemExit(f"the agent failed on {root}: {str(bad)[:200]}")
    return wall, usage.ru_utime + usage.ru_stime


def sealed(program: str, root: Path) -> tuple[float, float] | None:
    """One agent process asked for its seal once started: (wall seconds from the order to the
    answer, the process's CPU seconds); None when the answer is not the sealed digest."""
    p = subprocess.Popen(["python3", "-I", "-S", "-c", program], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert p.stdin is not None and p.stdout is not None
    time.sleep(0.3)  # its start-up (python, the program's decoding) done: it waits for the order
    began = time.perf_counter()
    order = {"prescan": {"root": str(root), "rule": RULE, "rehash": False, "seal": True}}
    p.stdin.write(json.dumps(order).encode() + b"\n")
    p.stdin.close()  # EOF: the answer comes first, then the agent exits (one without a seal says nothing)
    line = p.stdout.readline()
    wall = time.perf_counter() - began
    p.stdout.read()
    _, _, usage = os.wait4(p.pid, 0)
    answer = json.loads(line or b"null")
    if not isinstance(answer, dict) or answer.get("sealed") != "bench":
        return None
    return wall, usage.ru_utime + usage.ru_stime


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="10k,100k")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--baseline", default="main", help="the git revision to compare with (default: main)")
    args = ap.parse_args()
    sizes = args.sizes.split(",")
    if any(s not in SIZES for s in sizes):
        raise SystemExit(f"--sizes: use some of {', '.join(SIZES)}")
    with tempfile.TemporaryDirectory(prefix="pcagent-") as tmp_s:
        tmp = Path(tmp_s)
        versions = {
            args.baseline: agent_program(baseline_src(args.baseline, tmp / "base")),
            "this checkout": agent_program(REPO / "src"),
        }
        print(
            f"host agent, {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f} at start; median of {args.runs} "
            "run(s), the versions taking turns"
        )
        print(
            "| files | version | first: request to reply s / CPU s | again: request to reply s / CPU s "
            "| sealed: order to answer s / CPU s |"
        )
        print("|---|---|---|---|---|")
        for key in sizes:
            root = tmp / f"tree-{key}"
            request = tree(root, SIZES[key])
            runs: dict[str, list[tuple[float, ...]]] = {v: [] for v in versions}
            for _ in range(args.runs):
                for name, program in versions.items():
                    shutil.rmtree(root / ".patchctl", ignore_errors=True)  # a first run: nothing known
                    first = check(program, root, request, None)
                    again = check(program, root, request, PAUSE[key])
                    runs[name].append((*first, *again, *(sealed(program, root) or ())))
            for name, rows in runs.items():
                med = [statistics.median(r[i] for r in rows) for i in range(min(len(r) for r in rows))]
                first, again = f"{med[0]:.2f} / {med[1]:.2f}", f"{med[2]:.2f} / {med[3]:.2f}"
                seal = f"{med[4]:.3f} / {med[5]:.3f}" if len(med) == 6 else "-"
                print(f"| {SIZES[key]:,} | {name} | {first} | {again} | {seal} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
