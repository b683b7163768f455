"""``validate --profile health`` on a Slurm cluster (issue 36 req 3): the job runs validate's host
preflight and health checks on its nodes (srun steps, no ssh to a compute node) and starts no
Ray; the stack table and the storage rows come home as an ssh run's do, and a failing check ends
the run naming the node and the directory."""

from __future__ import annotations

import json

from slurm_fixtures import SlurmSite
from test_slurm_validate import prepare, validate
from tests.clirun import run

#: no torch or vLLM on this machine (as the ssh health tests skip them); small and lenient bars:
#: the loopback disks of a busy test machine
SMALL = (
    'preflight_skip = ["torch", "vllm", "patches"]\n'
    "[clusters.hpc.health]\nstorage_bytes = 4194304\nstorage_warn_mbps = 1\nstorage_fail_mbps = 1\n"
    "allreduce_min_bytes = 16384\nallreduce_max_bytes = 65536\nallreduce_warmup = 1\nallreduce_iters = 4\n"
)


def test_health_runs_the_stack_and_storage_checks_on_every_node_and_starts_no_ray(slurm_site: SlurmSite) -> None:
    prepare(slurm_site, SMALL)
    code, doc, out = validate(slurm_site, "--profile", "health", "--checks", "storage")
    assert code == 0, out
    assert doc["verdict"] == "pass" and doc["ray"] is None and doc["trained"] is None
    assert doc["slurm"]["state"] == "COMPLETED"
    assert [p["label"] for p in doc["preflight"]] == ["n1", "n1", "n2"]  # the job's Slurm checks, then each node's
    assert {r["check"] for r in doc["preflight"][0]["rows"]} >= {"slurm-cpus", "slurm-cgroup"}
    assert doc["preflight"][2]["address"] == slurm_site.slurm.cluster.address["n2"]
    stack = doc["health"]["stack"]
    assert stack["hosts"] == ["n1", "n2"] and stack["mismatches"] == []
    assert len(set(stack["rows"]["ray"])) == 1 and stack["rows"]["ray"][0] != "-"
    rows = {(r["host"], r["dir"]): r for r in doc["health"]["storage"]}
    # the shared root: one directory both nodes see, measured once
    assert rows[("n1", "tree")]["status"] == "pass" and rows[("n2", "tree")]["status"] == "shared"
    assert rows[("n1", "tree")]["shared_with"] == ["n1", "n2"] and rows[("n1", "tree")]["bytes"] == 4194304
    assert "ray-up" not in out and "trainer started" not in out
    assert not list(slurm_site.shared.glob(".patchctl-health*")), "the markers and probe file were left"


def test_storage_below_its_bar_fails_the_job_naming_node_and_dir(slurm_site: SlurmSite) -> None:
    bar = SMALL.replace(
        "storage_warn_mbps = 1\nstorage_fail_mbps = 1", "storage_warn_mbps = 999999999\nstorage_fail_mbps = 999999999"
    )
    config = prepare(slurm_site, bar)
    code, out = run(
        "validate",
        "hpc",
        "--config",
        str(config),
        "--out",
        str(slurm_site.dir / "run"),
        "--profile",
        "health",
        "--checks",
        "storage",
    )
    assert code == 1, out
    last = out.strip().splitlines()[-1]
    assert last.startswith("validate: FAIL — n1: storage check failed: tree directory "), last
    assert "below 999999999 MB/s" in last
    assert "stack (found, not imported)" in out and "storage (" in out  # the tables, as over ssh
    doc = json.loads((slurm_site.dir / "run" / "validate.json").read_text())
    assert doc["stage"] == "storage" and doc["host"] == "n1"
    assert doc["health"]["storage"] and doc["health"]["interconnect"] is None


def test_the_interconnect_check_runs_its_ranks_on_the_nodes_and_says_why_it_failed(slurm_site: SlurmSite) -> None:
    """The all-reduce ranks start on each node (srun steps, as ssh starts them on hosts); with no
    torch there (this machine's, shadowed as in the ssh test) the job ends in validate's own line."""
    shadow = slurm_site.dir / "no-torch"
    (shadow / "torch").mkdir(parents=True)
    (shadow / "torch" / "__init__.py").write_text(
        "raise ModuleNotFoundError(\"No module named 'torch'\", name='torch')\n"
    )
    config = prepare(
        slurm_site,
        SMALL.replace("[clusters.hpc.health]", f'[clusters.hpc.env]\nPYTHONPATH = "{shadow}"\n[clusters.hpc.health]'),
    )
    code, out = run(
        "validate",
        "hpc",
        "--config",
        str(config),
        "--out",
        str(slurm_site.dir / "run"),
        "--profile",
        "health",
        "--checks",
        "interconnect",
    )
    assert code == 1, out
    last = out.strip().splitlines()[-1]
    assert last.startswith(
        "validate: FAIL — n1: interconnect check failed: ModuleNotFoundError: No module named 'torch'; "
        "install torch in "
    ), last


def test_compare_sets_the_stack_beside_the_earlier_run_s(slurm_site: SlurmSite) -> None:
    """--compare on a Slurm cluster: the stack the job's nodes have beside an earlier run's, as over ssh."""
    config = prepare(slurm_site, SMALL)
    code, doc, out = validate(slurm_site, "--profile", "health", "--checks", "stack")
    assert code == 0, out
    found = doc["health"]["stack"]["rows"]
    earlier = json.loads((slurm_site.dir / "run" / "validate.json").read_text())
    earlier["health"]["stack"]["rows"]["ray"] = ["2.49.2", "2.49.2"]  # that run's nodes had another Ray
    (slurm_site.dir / "run" / "validate.json").write_text(json.dumps(earlier))
    args = ("--profile", "health", "--checks", "stack", "--compare", str(slurm_site.dir / "run"))
    code, out = run("validate", "hpc", "--config", str(config), "--out", str(slurm_site.dir / "r2"), *args)
    assert code == 0, out
    assert "stack vs the earlier run" in out and "2.49.2" in out
    compared = json.loads((slurm_site.dir / "r2" / "validate.json").read_text())["health"]["stack"]["compared"]
    assert compared["ray"] == [found["ray"][0], "2.49.2"]
    assert compared["python"][0] == compared["python"][1] == found["python"][0]
