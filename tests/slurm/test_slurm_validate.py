"""validate on a Slurm cluster (issue 36 req 3), through a real Slurm: one sbatch job whose script
forms Ray across the allocation and runs the stand-in trainer; each way a job can end badly."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from slurm_fixtures import SlurmSite

from tests.clirun import run


def prepare(site: SlurmSite, extra: str = "") -> Path:
    config = site.config(extra)
    code, out = run("migrate", "hpc", "--config", str(config), "--target", str(site.tree))
    assert code == 0, out
    return config


def validate(site: SlurmSite, *args: str) -> tuple[int, dict, str]:
    code, out = run(
        "validate", "hpc", "--config", str(site.dir / "patchctl.toml"), "--out", str(site.dir / "run"), "--json", *args
    )
    assert "{\n" in out, out
    return code, json.loads(out[out.index("{\n") :]), out


def test_the_standin_profile_passes_through_slurm(slurm_site: SlurmSite) -> None:
    prepare(slurm_site)
    code, doc, out = validate(slurm_site, "--ray-cpus", "1")
    assert code == 0, out
    assert doc["verdict"] == "pass", doc["cause"]
    assert doc["slurm"]["job_id"].isdigit() and doc["slurm"]["state"] == "COMPLETED"
    assert sorted(n["label"] for n in doc["ray"]["nodes"]) == ["n1", "n2"]
    assert {n["address"] for n in doc["ray"]["nodes"]} == set(slurm_site.slurm.cluster.address.values())
    assert all(g["status"] != "fail" for g in doc["trained"]["gates"])
    report = json.loads((slurm_site.dir / "run" / "report.json").read_text())
    assert report["verdict"] == "pass"
    assert (slurm_site.dir / "run" / "job.out").is_file() and (slurm_site.dir / "run" / "validate.json").is_file()
