"""validate's Ray options on a Slurm cluster (issue 36 req 3): ``--dashboard`` and ``--ray-client``
reach the job's Ray head as they reach an ssh head; ``--join`` has nothing to join in a job and is
refused before anything is submitted, saying why and what to do instead."""

from __future__ import annotations

import importlib.util

from slurm_fixtures import SlurmSite
from test_slurm_validate import one_error, prepare, validate
from tests.clirun import run


def test_join_is_refused_saying_why_and_nothing_is_submitted(slurm_site: SlurmSite) -> None:
    prepare(slurm_site)
    code, out = run("validate", "hpc", "--config", str(slurm_site.dir / "patchctl.toml"), "--join")
    assert code == 2, out
    assert one_error(out) == (
        "error: hpc: --join has nothing to join (a job's nodes are allocated without Ray, and the job starts its "
        "own) on a Slurm cluster; leave --join out (to use a Ray cluster already running on hosts, validate them "
        "as an ssh cluster)"
    )
    assert slurm_site.slurm.cluster.jobs() == [] and not (slurm_site.dir / "run").exists()


def test_the_dashboard_is_asked_of_the_job_s_head(slurm_site: SlurmSite) -> None:
    """Ray's dashboard needs ray[default]: where it is installed the run names where the dashboard
    listens and how to reach it through the login node; where it is not (minimal Ray, as here),
    the job's head says so in one line, which shows the option reached it."""
    prepare(slurm_site)
    code, doc, out = validate(slurm_site, "--ray-cpus", "1", "--dashboard")
    head = slurm_site.slurm.cluster.address["n1"]
    if importlib.util.find_spec("aiohttp") is None:
        assert code == 1, out
        assert doc["stage"] == "ray-up" and doc["host"] == "n1"
        assert doc["cause"].startswith("n1: ray start failed: ") and "Cannot include dashboard" in doc["cause"], doc
    else:
        assert code == 0, out
        assert f"dashboard at {head}:" in out and "; from here: ssh -L " in out


def test_the_ray_client_server_is_asked_of_the_job_s_head(slurm_site: SlurmSite) -> None:
    prepare(slurm_site)
    code, doc, out = validate(slurm_site, "--ray-cpus", "1", "--ray-client")
    head = slurm_site.slurm.cluster.address["n1"]
    if importlib.util.find_spec("grpc") is None:  # ray[client]
        assert code == 1, out
        assert doc["stage"] == "ray-up" and doc["host"] == "n1"
        assert doc["cause"] == (
            "n1: ray start failed: --ray-client: Ray's client server needs ray[client] on this host "
            "(pip install 'ray[client]' into the cluster's python)"
        ), doc
    else:
        assert code == 0, out
        assert f"Ray client server at {head}:" in out
