"""The job script is a fixed template with every value quoted (issue 36 req 3): a config's root,
interpreter and env values reach the job as the very strings written, never as shell."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

from tests.clirun import run

HOSTILE = 'a\'b "c" $(touch PWNED) `touch PWNED2` ${HOME} ; touch PWNED3 \\'


def test_every_value_reaches_the_job_as_written(tmp_path: Path) -> None:
    root = tmp_path / "root with 'quote\" $(x)"
    (root / ".patchctl").mkdir(parents=True)
    (root / ".patchctl" / "env.sh").write_text("")
    stub = tmp_path / "py dir" / "stub python"
    stub.parent.mkdir()
    stub.write_text('#!/bin/sh\nprintf "%s\\n" "$X" "$PWD" "$@" > "$OUT"\n')
    stub.chmod(0o755)
    config = tmp_path / "patchctl.toml"
    config.write_text(
        "[clusters.hpc]\n"
        'scheduler = "slurm"\nlogin = "login1"\nshared_root = true\npartition = "gpu-a100"\n'
        f"root = {json.dumps(str(root))}\npython = {json.dumps(str(stub))}\n"
        f"env = {{ X = {json.dumps(HOSTILE)} }}\n"
    )
    code, out = run("validate", "hpc", "--config", str(config), "--dry-run", "--json")
    assert code == 0, out
    doc = json.loads(out)
    assert "--partition=gpu-a100" in doc["sbatch"] and "--parsable" in doc["sbatch"]
    script = tmp_path / "job.sh"
    script.write_text(doc["script"])
    result = tmp_path / "out"
    subprocess.run(["sh", str(script)], cwd=tmp_path, env={**os.environ, "OUT": str(result)}, check=True, timeout=30)
    x, pwd, *args = result.read_text().splitlines()
    assert x == HOSTILE
    assert pwd == str(root)
    assert args[:2] == ["-m", "patchctl.slurm.jobside"] and args[2].startswith(f"{root}/.patchctl/runs/validate-")
    assert not list(tmp_path.glob("PWNED*")) and not list(root.glob("PWNED*"))


def test_without_a_shared_root_the_script_enters_the_batch_node_s_own_copy(tmp_path: Path) -> None:
    """``%n`` in root is the node Slurm runs the script on. Nothing of where sbatch ran is used (a
    node may not see the login node's home): the output goes into the run folder in the node's own
    tree, and the script waits there for the request patchctl stages once the job runs."""
    for node in ("n1", "login"):
        (tmp_path / "local" / node / f"verl {node}" / ".patchctl").mkdir(parents=True)
        (tmp_path / "local" / node / f"verl {node}" / ".patchctl" / "env.sh").write_text("")
    stub = tmp_path / "stub"
    stub.write_text('#!/bin/sh\necho "the driver starts"\nprintf "%s\\n" "$PWD" "$PYTHONPATH" "$@" > "$OUT"\n')
    stub.chmod(0o755)
    config = tmp_path / "patchctl.toml"
    config.write_text(
        "[clusters.hpc]\n"
        'scheduler = "slurm"\nlogin = "login1"\nshared_root = false\n'
        f"root = {json.dumps(str(tmp_path / 'local' / '%n' / 'verl %n'))}\npython = {json.dumps(str(stub))}\n"
    )
    code, out = run("validate", "hpc", "--config", str(config), "--dry-run", "--json")
    assert code == 0, out
    doc = json.loads(out)
    assert "--output=/dev/null" in doc["sbatch"]
    assert not any(w.startswith("--chdir=") for w in doc["sbatch"])
    script = tmp_path / "job.sh"
    script.write_text(doc["script"])
    submit = tmp_path / "home"
    submit.mkdir()
    node = tmp_path / "local" / "n1" / "verl n1"
    env = {**os.environ, "OUT": str(tmp_path / "out"), "SLURMD_NODENAME": "n1"}
    job = subprocess.Popen(["sh", str(script)], cwd=submit, env=env)
    try:
        deadline = time.monotonic() + 30
        while not list((node / ".patchctl" / "runs").glob("validate-*")) and time.monotonic() < deadline:
            time.sleep(0.05)
        (folder,) = (node / ".patchctl" / "runs").glob("validate-*")
        assert folder.stat().st_mode & 0o077 == 0  # the request, with the token, goes in here
        time.sleep(1.5)
        assert job.poll() is None and not (tmp_path / "out").exists()  # waiting for the request
        (folder / "job.json").write_text("{}")
        assert job.wait(timeout=30) == 0
    finally:
        job.kill()
    pwd, path, *args = (tmp_path / "out").read_text().splitlines()
    assert pwd == str(node)
    assert path.split(":")[0] == f"{node}/.patchctl/validate/pkg"
    assert args[2] == str(folder.relative_to(node))
    assert (folder / "job.out").read_text() == "the driver starts\n"
    assert list(submit.iterdir()) == []
