"""A Slurm cluster whose compute nodes share neither the tree nor the login node's home (issue 36
req 2, 3, 5): each node's slurmd runs where another folder is mounted over the login node's home,
so whatever patchctl or the job would leave there is not seen on the other side. migrate and
validate still work: the package and the request reach the job's nodes, and the run folder comes
home, through steps of the job itself (srun --jobid), never through the home."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

from slurm_fixtures import SlurmSite
from test_slurm_validate import LONG, finish, last_line, prepare_own_roots, spawn, top_finding, validate
from tests.clirun import run

from patchctl.slurm import run as slurm_run


def login_home(site: SlurmSite) -> Path:
    """Where a command on the login node starts (its home: sbatch's working directory)."""
    done = subprocess.run(
        ["ssh", "-F", str(site.slurm.login.ssh_config), "node1", "pwd"],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    return Path(done.stdout.strip())


def homes_apart(site: SlurmSite) -> tuple[Path, dict[str, Path]]:
    """Each node's slurmd restarted with a home of its own mounted over the login node's."""
    home = login_home(site)
    apart = {n: site.dir / "node-home" / n for n in site.slurm.cluster.nodes}
    for node, folder in apart.items():
        folder.mkdir(parents=True)
        site.slurm.cluster.remount(node, folder, home)
    return home, apart


def test_validate_passes_when_no_compute_node_sees_the_login_node_s_home(slurm_site: SlurmSite) -> None:
    home, apart = homes_apart(slurm_site)
    before = set((home / ".patchctl" / "runs").glob("*")) if (home / ".patchctl" / "runs").is_dir() else set()
    prepare_own_roots(slurm_site)
    code, doc, out = validate(slurm_site, "--ray-cpus", "1")
    assert code == 0, out
    assert doc["verdict"] == "pass", doc["cause"]
    head = doc["teardown"][0]["label"]
    node_run = Path(doc["trained"]["remote_run_dir"])
    assert node_run.parent.parent.parent == slurm_site.node_root(head), node_run
    # the run folder came home through the job's own step, whole: the trainer's files, the job's output
    run = slurm_site.dir / "run"
    assert json.loads((run / "report.json").read_text())["verdict"] == "pass"
    assert (run / "train.log").read_bytes() == (node_run / "train.log").read_bytes()
    assert '"event": "done"' in (run / "job.out").read_text()
    assert not (node_run / "job.json").exists(), "the request (the run's token) was left on the node"
    # nothing of the run went through either home (the job's tools keep their caches in the nodes' own)
    assert [f for f in apart.values() if (f / ".patchctl").exists()] == []
    after = set((home / ".patchctl" / "runs").glob("*")) if (home / ".patchctl" / "runs").is_dir() else set()
    assert after == before


def test_a_node_whose_copy_cannot_take_the_package_ends_the_run_naming_it(slurm_site: SlurmSite) -> None:
    prepare_own_roots(slurm_site)
    blocked = slurm_site.node_root("n2") / ".patchctl" / "validate"
    blocked.write_text("not a folder\n")  # where the package goes on n2
    code, out = run(
        "validate", "hpc", "--config", str(slurm_site.dir / "patchctl.toml"), "--out", str(slurm_site.dir / "run")
    )
    assert code == 1, out
    last = out.strip().splitlines()[-1]
    (job,) = {ln.split("job ", 1)[1].split(":")[0] for ln in out.splitlines() if "queue  job " in ln}
    assert last.startswith(
        f"validate: FAIL — job {job}: n2: patchctl's package could not be written into {blocked}/pkg: "
    ), last
    assert last.endswith("; it was cancelled"), last
    assert slurm_site.slurm.cluster.jobs() == []
    assert "JobState=CANCELLED" in slurm_site.slurm.cluster.run("scontrol", "show", "job", "-o", job).stdout


def test_a_job_slurm_ends_brings_home_the_output_followed_with_slurm_s_word(slurm_site: SlurmSite) -> None:
    """The time limit ends the job before any fetch: what the step following the job's output read
    (with Slurm's time-limit lines) is the job.out that comes home, and doctor names the limit."""
    homes_apart(slurm_site)
    prepare_own_roots(slurm_site)
    config = slurm_site.dir / "patchctl.toml"
    config.write_text(config.read_text().replace('time = "00:05:00"', 'time = "0:40"'))
    code, out = finish(spawn(slurm_site, *LONG))
    assert code == 1, out
    assert "hit its time limit (0:40) during training; raise the cluster's time" in last_line(out)
    text = (slurm_site.dir / "run" / "job.out").read_text()
    assert '"event": "train-line"' in text and "DUE TO TIME LIMIT" in text
    assert top_finding(slurm_site) == "slurm-time-limit"


def test_a_node_without_the_tree_ends_the_run_saying_to_migrate(slurm_site: SlurmSite) -> None:
    """No copy on the nodes: the job's script ends at once (its output, on the node, never read),
    or the staging step finds no tree first; either way one line says what to do, and nothing is
    created where the tree should be."""
    prepare_own_roots(slurm_site)
    for n in slurm_site.slurm.cluster.nodes:
        shutil.rmtree(slurm_site.node_root(n))
    code, out = run(
        "validate", "hpc", "--config", str(slurm_site.dir / "patchctl.toml"), "--out", str(slurm_site.dir / "run")
    )
    assert code == 1, out
    last = out.strip().splitlines()[-1]
    assert last.startswith("validate: FAIL — job ") and last.count("(run patchctl migrate)") == 1, last
    assert "no migrated tree" in last, last
    assert not any(slurm_site.node_root(n).exists() for n in slurm_site.slurm.cluster.nodes)
    assert slurm_site.slurm.cluster.jobs() == []


def python_whose_collect_fails(site: SlurmSite, times: int) -> Path:
    """The cluster's python, through a wrapper whose first ``times`` runs of the node agent's
    ``collect`` (the step fetching the run folder home) end with 1 before it starts, as a step
    lost on its way (srun, the login node's ssh) ends; every other run is the real python's."""
    wrapper, count = site.dir / "python-collect", site.dir / "collect-failures"
    wrapper.write_text(
        "#!/bin/sh\n"
        'for a in "$@"; do\n'
        f'  if [ "$a" = collect ] && [ "$(wc -c < {count} 2>/dev/null || echo 0)" -lt {times} ]; then\n'
        f"    printf x >> {count}; echo 'srun: error: the step lost its connection' >&2; exit 1\n"
        "  fi\n"
        "done\n"
        f'exec {sys.executable} "$@"\n'
    )
    wrapper.chmod(0o755)
    config = site.dir / "patchctl.toml"
    config.write_text(config.read_text().replace(f'python = "{sys.executable}"', f'python = "{wrapper}"'))
    return count


def test_a_fetch_of_the_run_folder_that_fails_once_is_tried_again(slurm_site: SlurmSite) -> None:
    prepare_own_roots(slurm_site)
    failures = python_whose_collect_fails(slurm_site, 1)
    code, doc, out = validate(slurm_site, "--ray-cpus", "1")
    assert failures.read_text() == "x", out  # the first fetch did fail
    assert code == 0, out
    assert doc["verdict"] == "pass", doc["cause"]
    run = slurm_site.dir / "run"
    assert json.loads((run / "report.json").read_text())["verdict"] == "pass"
    assert '"event": "done"' in (run / "job.out").read_text()
    assert slurm_site.slurm.cluster.jobs() == []


def test_a_fetch_that_keeps_failing_ends_in_one_line_naming_the_node(slurm_site: SlurmSite) -> None:
    prepare_own_roots(slurm_site)
    failures = python_whose_collect_fails(slurm_site, 99)
    code, doc, out = validate(slurm_site, "--ray-cpus", "1")
    assert code == 1, out
    assert failures.read_text() == "x" * slurm_run.COLLECTS
    head = doc["teardown"][0]["label"]
    node_run = Path(doc["trained"]["remote_run_dir"])
    # srun's line or the step's own, whichever srun wrote last
    cause = doc["cause"]
    assert cause.startswith(f"{head}: the run folder could not be fetched: the job's step ended with 1: "), cause
    assert cause.endswith(
        f" ({slurm_run.COLLECTS} tries); it stays on {head} in {node_run}: copy it from there "
        f"(a job or srun on {head}), or run validate again"
    ), cause
    assert "\n" not in cause
    assert (node_run / "report.json").is_file()  # where the line says it is
    assert not (slurm_site.dir / "run" / "report.json").exists()
    assert slurm_site.slurm.cluster.jobs() == []  # the job, holding for nothing now, was ended
