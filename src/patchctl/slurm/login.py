"""Commands on a Slurm cluster's login node: every ``sbatch``, ``srun``, ``squeue`` runs there over ssh.

Each is an argv list; :func:`patchctl.remote.ssh.ssh_argv` quotes every word for the login
node's shell, so no value of the config or of a node's answer is ever parsed as shell there.
"""

from __future__ import annotations

import base64
import json
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from patchctl import proc
from patchctl.clusters import Cluster
from patchctl.remote import ssh
from patchctl.slurm.settings import SlurmSettings


def job(cluster: Cluster) -> SlurmSettings:
    assert cluster.slurm is not None, "a Slurm cluster's command on an ssh cluster"
    return cluster.slurm


def argv(cluster: Cluster, words: Sequence[str]) -> list[str]:
    """ssh to the login node running ``words``."""
    return ssh.ssh_argv(cluster, cluster.hosts[0], words)


def run(
    cluster: Cluster, words: Sequence[str], timeout: float = 120.0, input: str | None = None
) -> subprocess.CompletedProcess[str]:
    """``words`` on the login node, to the end; the caller judges the exit code (255: ssh's own)."""
    try:
        return proc.run(argv(cluster, words), check=False, timeout=timeout, input=input)
    except subprocess.TimeoutExpired:
        return subprocess.CompletedProcess(list(words), 124, "", f"no answer from the login node in {timeout:g} s")


def agent_words(cluster: Cluster, args: Sequence[str]) -> list[str]:
    """The node agent (node_agent.py) run by the cluster's python with ``args``."""
    code = (Path(__file__).parent / "node_agent.py").read_bytes()
    return ssh.python_words(cluster, base64.b64encode(code).decode("ascii"), args)


def step_options(cluster: Cluster, nodes: Sequence[str]) -> list[str]:
    """The options of a short step on exactly ``nodes`` (one task each) in the cluster's partition."""
    s = job(cluster)
    out = [f"--nodes={len(nodes)}", "--ntasks-per-node=1", f"--nodelist={','.join(nodes)}", "--time=10"]
    out += [f"--{k}={getattr(s, k)}" for k in ("partition", "account", "qos") if getattr(s, k) is not None]
    return [*out, "--job-name=patchctl-migrate"]


def answers(stdout: str) -> list[dict[str, Any]]:
    """The JSON lines of the node agent's answers, whatever else a node printed."""
    out = []
    for line in stdout.splitlines():
        try:
            doc = json.loads(line)
        except ValueError:
            continue
        if isinstance(doc, dict) and "node" in doc:
            out.append(doc)
    return out


def tail(text: str) -> str:
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    return lines[-1] if lines else "no message"
