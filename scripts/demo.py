"""patchctl's whole path without GPUs: migrate -> validate -> PASS on two throwaway hosts.

Run from a clone, in the venv the README's set-up made (Ray comes with the test extra)::

    .venv/bin/pip install -q -e '.[test]' && .venv/bin/python scripts/demo.py

Everything it sets up is made under one temporary folder and removed at the end (``--keep``
leaves it, with the run's report): two real OpenSSH servers on 127.0.0.2 and 127.0.0.3 with
their own host keys, a user key and an ssh config of their own (your ~/.ssh is not read or
changed), the CPU stand-in verl tree of the validate tests (its trainer learns a toy task in
40 steps), a stub ``nvidia-smi`` that reports one GPU per host, and a ``patchctl.toml`` naming
the two hosts. It then runs the two commands a user would, as printed, and exits with
validate's code.

It needs the binaries ``/usr/sbin/sshd`` (openssh-server), ``ssh`` and ``ssh-keygen``
(openssh-client) and ``rsync``, and Ray in this interpreter; without one it stops in one line
naming the package to install (exit 2).
"""

from __future__ import annotations

import argparse
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "migrate"))

from sshd_harness import LoopbackCluster, missing_tools  # noqa: E402

STANDIN = REPO / "tests" / "validate" / "standin"
STUB_BIN = REPO / "tests" / "validate" / "stub_bin"
#: the verify --env checks a CPU host cannot pass: no torch, no vLLM, and the stand-in is unpatched
SKIP = '["torch", "vllm", "patches"]'
#: what a failed precondition exits with: the demo could not run (patchctl's exit code 2)
CANNOT_RUN = 2
#: seconds patchctl gets, after Ctrl-C, to stop Ray on the hosts before it is terminated
TEARDOWN = 60


def needs() -> str | None:
    """Why the demo cannot run here, in one line, or None."""
    why = missing_tools()
    if why:
        return why
    if shutil.which("git") is None:
        return "git not found: apt-get install -y git"
    try:
        import ray  # noqa: F401
    except ImportError:
        return f"Ray is not installed in {sys.executable}: pip install -e '.[test]' (or pip install 'ray>=2.52')"
    return None


def _free_port(address: str) -> int:
    with socket.socket() as s:
        s.bind((address, 0))
        return int(s.getsockname()[1])


def stand_in_tree(dest: Path) -> Path:
    """The validate tests' CPU stand-in verl, as a git checkout (migrate sends what git sees)."""
    shutil.copytree(STANDIN, dest, ignore=shutil.ignore_patterns("__pycache__"))
    who = ["-c", "user.name=patchctl-demo", "-c", "user.email=demo@patchctl.invalid"]
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], [*who, "commit", "-q", "-m", "stand-in verl"]):
        subprocess.run(["git", "-C", str(dest), *args], check=True, capture_output=True)
    return dest


def write_config(path: Path, loop: LoopbackCluster, roots: Path) -> Path:
    """A cluster ``demo`` of the two hosts; Ray's node IPs on a loopback net of this run's own."""
    net = f"127.{secrets.randbelow(200) + 20}.{secrets.randbelow(250) + 1}"
    path_env = f"{STUB_BIN}:/usr/local/bin:/usr/bin:/bin"
    hosts = []
    for i, h in enumerate(loop.hosts):
        address = f"{net}.{i + 2}"
        env = f'{{ PATH = "{path_env}", CUDA_VISIBLE_DEVICES = "{i}" }}'
        hosts.append(
            f'  {{ ssh = "{h.alias}", root = "{roots / h.alias / "verl_Uky"}", address = "{address}", '
            f"gpus = 1, ray_port = {_free_port(address)}, env = {env} }},"
        )
    path.write_text(
        "[clusters.demo]\nhosts = [\n" + "\n".join(hosts) + "\n]\n"
        f'root = "/unused"\nssh_config = "{loop.ssh_config}"\npython = "{sys.executable}"\n'
        f"preflight_skip = {SKIP}\ntimeout = 20\n"
    )
    return path


def step(argv: list[str], env: dict[str, str]) -> int:
    """Run one patchctl command as a user would; on Ctrl-C wait for its own teardown.

    The terminal's Ctrl-C reaches patchctl too, which then stops the Ray processes it started on
    every host. ``subprocess.run`` answered the interrupt by killing patchctl at once, so the demo
    said "removed" while Ray kept running on the hosts for up to a minute (issue 39).
    """
    shown = " ".join(argv[2:]).replace(sys.executable, "python")
    print(f"\n$ patchctl {shown.removeprefix('patchctl ')}", flush=True)
    child = subprocess.Popen(argv, env=env)
    # The first Ctrl-C ends the wait; from then on the demo ignores SIGINT itself (a second
    # Ctrl-C still reaches patchctl, in the same process group). Ignoring it only inside the
    # except block left a window in which a second SIGINT, arriving while patchctl tore down,
    # cut the demo's own teardown message and wait short.
    previous = signal.signal(signal.SIGINT, _first_interrupt)
    try:
        return child.wait()
    except KeyboardInterrupt:
        print("demo: interrupted; waiting for patchctl to stop what it started on the hosts", flush=True)
        try:
            child.wait(timeout=TEARDOWN)
        except subprocess.TimeoutExpired:
            child.terminate()
            child.wait(timeout=10)
        raise
    finally:
        signal.signal(signal.SIGINT, previous)


def _first_interrupt(signum: int, frame: object) -> None:
    """Raise KeyboardInterrupt once, and ignore every later SIGINT until the step ends."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    raise KeyboardInterrupt


def run(base: Path, keep: bool = False) -> int:
    loop = LoopbackCluster(base / "sshd", 2)
    config = base / "patchctl.toml"
    try:
        tree = stand_in_tree(base / "src" / "verl_Uky")
        config = write_config(base / "patchctl.toml", loop, base / "hosts")
        # migrate's per-host state goes under the cache: this run's own, removed with it
        env = {**os.environ, "PATCHCTL_CACHE": str(base / "cache")}
        patchctl = [sys.executable, "-m", "patchctl"]
        print(
            f"demo: 2 loopback hosts ({', '.join(f'{h.alias} = {h.address}' for h in loop.hosts)}), "
            f"a CPU stand-in verl at {tree}, config {config}",
            flush=True,
        )
        code = step([*patchctl, "migrate", "demo", "--target", str(tree), "--config", str(config)], env)
        if code != 0:
            return code
        return step(
            [*patchctl, "validate", "demo", "--config", str(config), "--ray-cpus", "1", "--out", str(base / "run")], env
        )
    finally:
        if keep:
            _kept(loop, config)
        else:
            loop.close()


def _kept(loop: LoopbackCluster, config: Path) -> None:
    """``--keep``: the hosts stay up, and how to send your own tree to them."""
    pids = [str(h.proc.pid) for h in loop.hosts if h.proc is not None]
    print(
        f"demo: the hosts stay up (sshd pids {', '.join(pids)}); send your own verl tree to them with\n"
        f"  patchctl migrate demo --config {config} --target ~/your/verl\n"
        f"  patchctl validate demo --config {config}   # the stand-in's profile needs the stand-in tree\n"
        f"demo: stop them with: kill {' '.join(pids)}",
        flush=True,
    )


def main() -> int:
    parser = argparse.ArgumentParser(description="migrate -> validate -> PASS on two loopback hosts, on CPU.")
    parser.add_argument(
        "--keep", action="store_true", help="keep the hosts running and the folder (config, report): try your own tree"
    )
    args = parser.parse_args()
    why = needs()
    if why:
        print(f"demo: cannot run: {why}", file=sys.stderr)
        return CANNOT_RUN
    base = Path(tempfile.mkdtemp(prefix="patchctl-demo-"))
    try:
        code = run(base, keep=args.keep)
    except KeyboardInterrupt:
        code = 130
    finally:
        if args.keep:
            print(f"demo: kept {base} (the run directory above holds the report; rm -r it when done)")
        else:
            shutil.rmtree(base, ignore_errors=True)
            print(f"demo: removed {base} and everything in it (--keep keeps it)")
    print(f"demo: {'PASS' if code == 0 else f'stopped with exit code {code}'}")
    return code


if __name__ == "__main__":
    sys.exit(main())
