"""What a migrate to ssh hosts loads (issue 39): its whole command is measured against rsync's, so
what only a Slurm cluster or a matrix worker needs stays out of it. A fresh ``python -m patchctl``
runs as a user runs it; the test reads the modules it had loaded when it exited."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from migrate_helpers import make_repo

if TYPE_CHECKING:
    from migrate_fixtures import Site

#: modules a migrate to an ssh cluster has no use for, and who needs them
NOT_FOR_SSH_HOSTS = {
    "patchctl.slurm.confirm": "a Slurm cluster's srun confirmation (or a --nodes list to check)",
    "patchctl.slurm.login": "a Slurm cluster's login node",
    "multiprocessing": "telling a matrix worker's progress line apart: a process without it is none",
    "pickle": "multiprocessing's",
}

DRIVER = """
import atexit, runpy, sys
out = sys.argv.pop(1)
atexit.register(lambda: open(out, "w").write("\\n".join(sorted(sys.modules))))
sys.argv[0] = "patchctl"
runpy.run_module("patchctl", run_name="__main__", alter_sys=True)
"""


def test_a_migrate_to_ssh_hosts_loads_no_slurm_or_multiprocessing(site: Site, tmp_path: Path) -> None:
    tree = make_repo(tmp_path / "src", {"verl/__init__.py": "", "a.txt": "a\n"})
    config = site.config("", ["node1"])
    out = tmp_path / "modules.txt"
    argv = ["migrate", "loop", "--target", str(tree), "--config", str(config), "--json"]
    done = subprocess.run(
        [sys.executable, "-c", DRIVER, str(out), *argv],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PATCHCTL_CACHE": str(tmp_path / "cache")},
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert [h["status"] for h in json.loads(done.stdout)["hosts"]] == ["ok"]
    names = set(out.read_text().split())
    assert "patchctl.migrate.runner" in names  # it ran the migrate
    loaded = {name: why for name, why in NOT_FOR_SSH_HOSTS.items() if name in names}
    assert not loaded, f"a migrate to ssh hosts imported modules only these need: {loaded}"
