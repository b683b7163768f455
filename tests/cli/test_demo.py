"""``scripts/demo.py``, the README's way to try migrate -> validate -> PASS without GPUs, run as
a new user runs it: real sshd hosts on loopback, the CPU stand-in, every setup step its own."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from realparts import require

DEMO = Path(__file__).resolve().parents[2] / "scripts" / "demo.py"


def test_the_demo_passes_and_leaves_nothing_behind() -> None:
    require("/usr/sbin/sshd", "ssh", "ssh-keygen", "rsync")
    done = subprocess.run([sys.executable, str(DEMO)], capture_output=True, text=True, timeout=400)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "validate: PASS" in done.stdout and done.stdout.rstrip().endswith("demo: PASS")
    assert "$ patchctl migrate demo --target " in done.stdout and "$ patchctl validate demo --config " in done.stdout
    base = Path(re.search(r"demo: removed (\S+) and everything in it", done.stdout).group(1))
    assert base.name.startswith("patchctl-demo-") and not base.exists()
    left = []  # no process of the run (sshd, Ray, trainer) outlives it: all had the folder in their env
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if (
                str(base).encode()
                in Path(f"/proc/{pid}/environ").read_bytes() + Path(f"/proc/{pid}/cmdline").read_bytes()
            ):
                left.append(pid)
        except OSError:
            continue
    assert left == []


def test_a_missing_tool_is_one_line_naming_its_package(tmp_path: Path) -> None:
    env = {**os.environ, "PATCHCTL_SSHD": str(tmp_path / "no-sshd")}
    done = subprocess.run([sys.executable, str(DEMO)], capture_output=True, text=True, env=env, timeout=60)
    assert done.returncode == 2
    assert done.stderr == f"demo: cannot run: {tmp_path / 'no-sshd'} not found: apt-get install -y openssh-server\n"
    assert "demo: PASS" not in done.stdout


def _processes_of(base: Path) -> set[str]:
    """Processes of a demo run: its folder in their environment or command line (sshd, the
    trainer) or as their working directory (every Ray process validate starts runs in the host's
    tree, which lies under the folder)."""
    left = set()
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            seen = Path(f"/proc/{pid}/environ").read_bytes() + Path(f"/proc/{pid}/cmdline").read_bytes()
            cwd = os.readlink(f"/proc/{pid}/cwd")
        except OSError:
            continue
        if str(base).encode() in seen or cwd.startswith(str(base)):
            left.add(pid)
    return left


def _cmdline(pid: str) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")[:200]
    except OSError:
        return "(gone)"


def test_ctrl_c_during_ray_up_waits_for_the_teardown() -> None:
    """Ctrl-C reaches the demo and patchctl alike: the demo used to kill patchctl at once and say
    everything was removed while Ray ran on in the hosts for up to a minute (issue 39)."""
    import signal

    require("/usr/sbin/sshd", "ssh", "ssh-keygen", "rsync")
    demo = subprocess.Popen(
        [sys.executable, str(DEMO)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True
    )
    assert demo.stdout is not None
    seen = []
    for line in demo.stdout:
        seen.append(line)
        if "head up at" in line:  # Ray runs on node1 now; node2 is joining
            break
    os.killpg(demo.pid, signal.SIGINT)  # as the terminal sends it: to the whole foreground group
    rest, _ = demo.communicate(timeout=120)
    out = "".join(seen) + rest
    assert demo.returncode == 130, out[-3000:]
    assert "waiting for patchctl to stop what it started" in out
    base = Path(re.search(r"demo: removed (\S+) and everything in it", out).group(1))
    left = {pid: _cmdline(pid) for pid in _processes_of(base)}
    assert left == {}  # checked at once: nothing was left to die later
