"""Each step into and out of a running job without a shared root (slurm/relay.py), one by one,
through the real Slurm of slurm_fixtures.py: a job of ``sleep`` holds two nodes, each with its
own migrated tree, and each of relay's functions runs its ``srun --jobid`` step into it from the
login node, as validate does while its job runs. What each must answer: the package in every
node's tree, the request written 0600 on the batch node, the output file followed from an
offset, the run folder's files home, and one line naming the failure when a step fails."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from slurm_fixtures import Slurm, SlurmSite, stand_in_site
from test_slurm_validate import prepare_own_roots

from patchctl.clusters import Cluster, load_cluster
from patchctl.slurm import relay


def running_job(site: SlurmSite) -> str:
    """A job holding both nodes (sleep), once Slurm runs it."""
    job = site.slurm.cluster.run(
        "sbatch", "--parsable", "--nodes=2", "--partition=debug", "--time=5", "--wrap", "sleep 300"
    ).stdout.strip()
    deadline = time.monotonic() + 60
    while site.slurm.cluster.run("squeue", "-h", "-j", job, "-o", "%T").stdout.strip() != "RUNNING":
        assert time.monotonic() < deadline, f"job {job} never ran"
        time.sleep(0.2)
    return job


@pytest.fixture(scope="module")
def job(slurm: Slurm, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[SlurmSite, Cluster, str]]:
    """One migrated site and one running job for the whole file (each step takes a second; the
    migrate and the job's start, most of a test's time, are shared)."""
    top = tmp_path_factory.mktemp("relay")
    with pytest.MonkeyPatch.context() as mp:
        site = stand_in_site(slurm, top, mp)
        prepare_own_roots(site)
        try:
            yield site, load_cluster("hpc", top / "patchctl.toml"), running_job(site)
        finally:
            slurm.cluster.reset()


def test_the_package_and_the_request_reach_the_job_s_nodes(job: tuple[SlurmSite, Cluster, str]) -> None:
    site, c, job_id = job
    assert relay.stage(c, job_id, "n[1-2]", 2) == ""
    for n in ("n1", "n2"):
        assert (site.node_root(n) / ".patchctl/validate/pkg/patchctl/slurm/relay.py").is_file()
    # a node answering less than the count asked: a step of more nodes than the job holds fails
    why = relay.stage(c, job_id, "n[1-2]", 3)
    assert why.startswith("the step staging patchctl's package ended with 1: srun: error"), why
    # the request: on the batch node alone, private, never on the login node's disk
    assert relay.send_request(c, job_id, "n1", ".patchctl/runs/r1", '{"token": "t"}') == ""
    request = site.node_root("n1") / ".patchctl/runs/r1/job.json"
    assert request.read_text() == '{"token": "t"}' and request.stat().st_mode & 0o777 == 0o600
    assert not (site.node_root("n2") / ".patchctl/runs/r1").exists()
    assert relay.node_run(c, "n1", ".patchctl/runs/r1") == str(site.node_root("n1") / ".patchctl/runs/r1")
    why = relay.send_request(c, job_id, "n9", ".patchctl/runs/r1", "{}")  # a node the job does not hold
    assert why.startswith("the step writing the run's request ended with 1: srun: error"), why


def test_the_job_s_output_is_followed_from_the_offset_read(job: tuple[SlurmSite, Cluster, str]) -> None:
    site, c, job_id = job
    run = site.node_root("n1") / ".patchctl/runs/r2"
    run.mkdir(parents=True)
    out = run / "job.out"
    out.write_text("abcdef\n")
    stream = relay.Stream(c, job_id, "n1", str(out), 3)
    try:
        got = ""
        deadline = time.monotonic() + 30
        while "later" not in got and time.monotonic() < deadline:
            if got == "def\n":
                with out.open("a") as f:
                    f.write("later é\n")
            text, said = stream.drain()
            got += text
            assert not [s for s in said if s.startswith("tail:")]
            time.sleep(0.1)
        assert got == "def\nlater é\n"
        assert stream.alive
    finally:
        stream.close()
    assert not stream.alive
    # a file not there yet (the job's script not started): tail's complaint is no line of srun's,
    # and the file is followed once it appears
    later = run / "later.out"
    waiting = relay.Stream(c, job_id, "n1", str(later), 0)
    try:
        time.sleep(2)
        assert waiting.drain() == ("", [])
        later.write_text("there\n")
        got = ""
        deadline = time.monotonic() + 30
        while got != "there\n" and time.monotonic() < deadline:
            text, said = waiting.drain()
            got += text
            assert said == [], said
            time.sleep(0.1)
        assert got == "there\n"
    finally:
        waiting.close()
    # srun's own lines come apart from the file's text: a node the job does not hold
    lost = relay.Stream(c, job_id, "n9", str(out), 0)
    try:
        lost.child.wait(timeout=30)
        time.sleep(0.5)
        text, said = lost.drain()
        assert text == "" and any(line.startswith("srun: error") for line in said), said
    finally:
        lost.close()


def test_the_run_folder_s_files_come_home_and_the_job_is_let_go(
    job: tuple[SlurmSite, Cluster, str], tmp_path: Path
) -> None:
    site, c, job_id = job
    run = site.node_root("n1") / ".patchctl/runs/r3"
    (run / "plots").mkdir(parents=True)
    (run / "report.json").write_text('{"verdict": "pass"}')
    (run / "plots" / "loss.png").write_bytes(b"png")
    home = tmp_path / "home"
    got, why = relay.collect(c, job_id, "n1", str(run), ["report.json", "plots", "nothing"], home)
    assert why == "" and sorted(got) == ["plots/loss.png", "report.json"]
    assert (home / "report.json").read_text() == '{"verdict": "pass"}'
    assert (home / "plots" / "loss.png").read_bytes() == b"png"
    assert (run / ".fetched").exists()  # what lets the holding job end
    got, why = relay.collect(c, job_id, "n9", str(run), ["report.json"], tmp_path / "none")
    assert got == [] and why.startswith("ended with 1: srun: error"), why


def test_a_step_that_never_answers_is_ended_after_its_timeout(job: tuple[SlurmSite, Cluster, str]) -> None:
    _, c, job_id = job
    start = time.monotonic()
    code, out, err = relay._run(c, [*relay.step(job_id, "n1", 1), "sleep", "60"], b"", 2)
    assert (code, err) == (124, "no answer from the job's step in 2 s")
    assert time.monotonic() - start < 30
    code, out, err = relay._run(c, [*relay.step(job_id, "n1", 1), "sh", "-c", "cat; echo oops >&2; exit 3"], b"in", 60)
    assert code == 3 and out == b"in" and "oops" in err, (code, out, err)


# last: it takes n2's tree away and blocks n1's run folders
def test_a_node_whose_tree_is_gone_is_named_by_the_staging_step(job: tuple[SlurmSite, Cluster, str]) -> None:
    site, c, job_id = job
    (site.node_root("n2") / ".patchctl").rename(site.node_root("n2") / ".patchctl-gone")
    why = relay.stage(c, job_id, "n[1-2]", 2)
    assert why == f"n2: no migrated tree at {site.node_root('n2')} (run patchctl migrate)", why
    # a run folder that cannot be made: the agent's step fails, and says so
    (site.node_root("n1") / ".patchctl" / "runs" / "blocked").write_text("not a folder\n")
    why = relay.send_request(c, job_id, "n1", ".patchctl/runs/blocked/r", "{}")
    assert why.startswith("the step writing the run's request ended with "), why
