"""Ctrl-C during a GPU validate (session 15, helper gpu15): migrate to one loopback sshd host (as
benchmarks/validate_one.py), start ``patchctl validate one`` in a process group of its own, send
SIGINT to that group (what a terminal's Ctrl-C does) when a trigger line appears, then list every
process that is new since before validate started and still alive, the Ray processes, the
``patchctl.validate.host`` supervisors and nvidia-smi's compute apps, at fixed times after the
SIGINT. Run from the repository root, sshd and rsync unpacked first::

    python ctrlc.py --tree T --out DIR --env K=V ... --trigger head|step [--trigger ...]

Only this run's own processes are ever ended (descendants of its validate and sshd listeners, by
pid); no ``ray stop``, which would end every Ray of the user on the machine.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path.cwd()
sys.path.insert(0, str(REPO / "benchmarks"))

from bench_validate import (  # noqa: E402
    CPU_SKIP,
    MULTICAST_OFF,
    LoopbackCluster,
    config,
    host,
    missing_tools,
    patchctl,
    tree_and_env,
)

TRIGGERS = {"head": re.compile(r"head up at"), "step": re.compile(r"train\s+step 1\b")}
WATCH = re.compile(r"ray|raylet|gcs_server|patchctl\.validate|verl|vllm|main_ppo|sshd: ")


def procs() -> dict[int, str]:
    out = subprocess.run(["ps", "-eo", "pid=,ppid=,pgid=,sid=,etimes=,args="], capture_output=True, text=True).stdout
    rows: dict[int, str] = {}
    for line in out.splitlines():
        parts = line.split(None, 5)
        if len(parts) < 6:
            continue
        pid, args = int(parts[0]), parts[5]
        if pid == os.getpid() or args.startswith("[") or args.startswith("ps -eo") or "nvidia-smi" in args:
            continue
        rows[pid] = line.strip()
    return rows


def descendants(roots: list[int]) -> set[int]:
    """Every live process below ``roots`` (not the roots themselves)."""
    out = subprocess.run(["ps", "-eo", "pid=,ppid="], capture_output=True, text=True).stdout
    children: dict[int, list[int]] = {}
    for line in out.splitlines():
        pid, ppid = (int(x) for x in line.split())
        children.setdefault(ppid, []).append(pid)
    found: set[int] = set()
    todo = list(roots)
    while todo:
        for c in children.get(todo.pop(), []):
            if c not in found and c != os.getpid():
                found.add(c)
                todo.append(c)
    return found


def gpu_apps() -> list[str]:
    try:
        done = subprocess.run(
            ["nvidia-smi", "--query-compute-apps=pid,process_name,used_memory", "--format=csv,noheader"],
            capture_output=True,
            text=True,
        )
    except FileNotFoundError:
        return ["(no nvidia-smi)"]
    mem = subprocess.run(
        ["nvidia-smi", "--query-gpu=memory.used", "--format=csv,noheader"], capture_output=True, text=True
    )
    print(f"    GPU memory.used: {mem.stdout.strip()}", flush=True)
    return [line for line in done.stdout.splitlines() if line.strip()]


def one(name: str, trigger: str, cfg: Path, out: Path, work: Path, args: argparse.Namespace, roots: list[int]) -> dict:
    run_dir = out / name
    before = set(procs())
    text: list[str] = []
    fired = threading.Event()
    t0 = time.monotonic()
    argv = ["validate", "one", "--profile", args.profile, "--config", str(cfg), "--out", str(run_dir)]
    p = subprocess.Popen(
        [sys.executable, "-m", "patchctl", *argv, "--timeout", args.timeout],
        cwd=work,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,  # its own process group, as a shell's foreground job
    )
    doc: dict = {"name": name, "trigger": trigger, "validate_pid": p.pid, "command": "patchctl " + " ".join(argv)}

    def reader() -> None:
        assert p.stdout is not None
        for line in p.stdout:
            stamp = f"[{time.monotonic() - t0:7.1f} s] {line.rstrip()}"
            text.append(stamp)
            print(stamp, flush=True)
            if not fired.is_set() and TRIGGERS[trigger].search(line):
                fired.set()

    th = threading.Thread(target=reader, daemon=True)
    th.start()
    while not fired.wait(0.2):  # the trigger, or validate ending by itself
        if p.poll() is not None:
            break
    if not fired.is_set():
        th.join(5)
        doc["error"] = f"validate ended (rc {p.returncode}) before its trigger line"
        print(doc["error"], flush=True)
        (out / f"{name}.txt").write_text("\n".join(text) + "\n")
        return doc
    t_int = time.monotonic()
    doc["sigint_at_s"] = round(t_int - t0, 1)
    print(f"=== SIGINT to process group {p.pid} at {doc['sigint_at_s']} s", flush=True)
    os.killpg(p.pid, signal.SIGINT)
    checks = []
    for at in (2, 5, 10, 15, 20, 30, 45, 60, args.wait):
        while time.monotonic() - t_int < at:
            if "exit_after_sigint_s" not in doc and p.poll() is not None:
                doc["exit_after_sigint_s"] = round(time.monotonic() - t_int, 1)
                print(f"=== validate exited rc={p.returncode} {doc['exit_after_sigint_s']} s after SIGINT", flush=True)
            time.sleep(0.1)
        now = procs()
        new = {pid: row for pid, row in now.items() if pid not in before}
        session = [row for row in now.values() if int(row.split()[3]) == p.pid]
        watched = [row for row in new.values() if WATCH.search(row)]
        apps = gpu_apps()
        alive = p.poll() is None
        checks.append(
            {
                "at_s": at,
                "validate_alive": alive,
                "new": list(new.values()),
                "session": session,
                "watched": watched,
                "gpu_apps": apps,
            }
        )
        print(
            f"--- +{at} s: validate {'ALIVE' if alive else 'exited'}; {len(new)} new process(es), "
            f"{len(session)} in its session, {len(watched)} ray/patchctl/verl/sshd, GPU apps {len(apps)}",
            flush=True,
        )
        for row in new.values():
            print("    new: " + row[:300], flush=True)
        for app in apps:
            print("    gpu: " + app, flush=True)
        if not alive and at >= 20 and not watched and not [a for a in apps if not a.startswith("(")]:
            break
    if p.poll() is None:
        print("=== validate still alive: SIGKILL to its group", flush=True)
        os.killpg(p.pid, signal.SIGKILL)
        p.wait()
    th.join(5)
    doc["rc"] = p.returncode
    doc["checks"] = checks
    vj = run_dir / "validate.json"
    if vj.exists():
        v = json.loads(vj.read_text())
        for key in ("verdict", "cause", "teardown", "timings"):
            doc[key] = v.get(key)
        print(f"=== validate.json: verdict {doc['verdict']} cause {doc['cause']}", flush=True)
        print("    teardown: " + json.dumps(doc["teardown"])[:2000], flush=True)
    else:
        print("=== no validate.json", flush=True)
    (out / f"{name}.txt").write_text("\n".join(text) + "\n")
    # what the Ctrl-C left behind is reported above: end this run's own leftovers, by pid
    left = descendants([p.pid, *roots])
    for pid in left:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
    if left:
        print(f"=== ended {len(left)} leftover process(es) of this run by pid: {sorted(left)}", flush=True)
    return doc


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tree", type=Path)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--env", action="append", default=[])
    ap.add_argument("--profile", default="smoke-vllm")
    ap.add_argument("--timeout", default="300")
    ap.add_argument("--trigger", action="append", choices=sorted(TRIGGERS), required=True)
    ap.add_argument("--wait", type=float, default=90)
    ap.add_argument("--end", type=float, default=0, help="epoch seconds: skip a trigger with less than --need left")
    ap.add_argument("--need", type=float, default=200)
    ap.add_argument("--cpu", action="store_true", help="the CPU stand-in tree and stub nvidia-smi (a dry test)")
    args = ap.parse_args()
    why = missing_tools()
    if why:
        print(f"cannot run: {why}")
        return 2
    work = Path(tempfile.mkdtemp(prefix="pcv-ctrlc-"))
    out = args.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    loop = LoopbackCluster(work / "sshd", 1)
    docs = []
    try:
        if args.cpu:
            tree, env = tree_and_env(work, None, args.env)
        else:
            tree, env = args.tree.resolve(), {**MULTICAST_OFF, **dict(e.split("=", 1) for e in args.env)}
        cfg = out / "patchctl.toml"
        node = host("node1", "127.0.0.2", work / "hosts" / "node1" / "verl_Uky", "0", 1, {})
        config(cfg, loop, {"one": [node]}, env, CPU_SKIP if args.cpu else [])
        log: list[str] = []
        code, secs, text = patchctl(["migrate", "one", "--target", str(tree), "--config", str(cfg)], log, work)
        (out / "migrate.txt").write_text(text)
        print(f"migrate one: rc={code} in {secs:.1f} s", flush=True)
        if code:
            print(text[-3000:])
            return 1
        roots = [h.proc.pid for h in loop.hosts if h.proc is not None]
        for trig in args.trigger:
            if args.end and args.end - time.time() < args.need:
                print(f"=== ctrlc-{trig} skipped: {args.end - time.time():.0f} s left", flush=True)
                continue
            print(f"=== ctrlc-{trig}: SIGINT at '{TRIGGERS[trig].pattern}'", flush=True)
            docs.append(one(f"ctrlc-{trig}", trig, cfg, out, work, args, roots))
            (out / "ctrlc.json").write_text(json.dumps(docs, indent=2))
    finally:
        loop.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
