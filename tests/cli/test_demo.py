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
    base = Path(re.search(r"demo: removed (\S+) and everything in it", done.stdout).group(1))  # type: ignore[union-attr]
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
