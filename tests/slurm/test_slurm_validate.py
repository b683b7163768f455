"""validate on a Slurm cluster (issue 36 req 3), through a real Slurm: one sbatch job whose script
forms Ray across the allocation and runs the stand-in trainer; each way a job can end badly."""

from __future__ import annotations

import json
import os
import platform
import signal
import subprocess
import sys
import time
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


def test_without_a_shared_root_the_job_runs_in_the_first_node_s_own_root(slurm_site: SlurmSite) -> None:
    # migrate puts each node's own copy at local/<node>/verl_Uky (and the login node's at local/login)
    assert prepare_own_roots(slurm_site) == 0
    # the node's copy is the one that must run: the login node's copy, were the job to use it, fails
    login_main = slurm_site.dir / "local" / "login" / "verl_Uky" / "verl" / "trainer" / "main_ppo.py"
    login_main.write_text("raise SystemExit('the login node copy ran, not the node copy')\n")
    # and each node's steps (the Ray head, the worker, the trainer) must enter that node's own copy
    for n in ("n1", "n2"):
        with (slurm_site.node_root(n) / ".patchctl" / "env.sh").open("a") as env:
            env.write(
                f'[ "$SLURMD_NODENAME" = {n} ] || {{ echo "{n}\'s copy entered on $SLURMD_NODENAME" >&2; exit 1; }}\n'
            )
    code, doc, out = validate(slurm_site, "--ray-cpus", "1")
    assert code == 0, out
    assert doc["verdict"] == "pass", doc["cause"]
    head = doc["teardown"][0]["label"]
    assert head in ("n1", "n2") and doc["slurm"]["state"] == "COMPLETED"
    # the trainer ran, and wrote its files, in the first node's own root
    node_run = Path(doc["trained"]["remote_run_dir"])
    assert node_run.parent.parent.parent == slurm_site.node_root(head), node_run
    assert (node_run / "report.json").is_file()
    # ... and they came home, with the job's log and validate.json
    home = slurm_site.dir / "run"
    report = json.loads((home / "report.json").read_text())
    assert report["verdict"] == "pass"
    assert (home / "train.log").read_bytes() == (node_run / "train.log").read_bytes()
    assert '"event": "done"' in (home / "job.out").read_text()
    assert json.loads((home / "validate.json").read_text())["verdict"] == "pass"


def test_compare_and_baseline_judge_the_report_a_slurm_job_brought_home(slurm_site: SlurmSite) -> None:
    # --compare has the job find every node's stack (validate's host preflight: no torch or vLLM here)
    prepare_own_roots(slurm_site, 'preflight_skip = ["torch", "vllm", "patches"]\n')
    code, _, out = validate(slurm_site, "--ray-cpus", "1")
    assert code == 0, out
    # the earlier run's stack, as a run that found one records it (an ssh run, a Slurm run with checks)
    earlier = json.loads((slurm_site.dir / "run" / "validate.json").read_text())
    earlier["health"] = {"stack": {"hosts": ["old1"], "rows": {"ray": ["2.49.2"], "python": ["3.9.0"]}}}
    (slurm_site.dir / "run" / "validate.json").write_text(json.dumps(earlier))
    # a reference whose reward at step 1 no run of this stand-in reaches
    ref = json.loads((slurm_site.dir / "run" / "report.json").read_text())
    ref["steps"][0]["metrics"]["critic/score/mean"] = 99.0
    (slurm_site.dir / "ref").mkdir()
    (slurm_site.dir / "ref" / "report.json").write_text(json.dumps(ref))
    config, again = str(slurm_site.dir / "patchctl.toml"), str(slurm_site.dir / "run2")
    args = ("--compare", str(slurm_site.dir / "run" / "report.json"), "--baseline", str(slurm_site.dir / "ref"))
    code, out = run("validate", "hpc", "--config", config, "--out", again, "--json", "--ray-cpus", "1", *args)
    doc = json.loads(out[out.index("{\n") :])
    assert code == 1 and doc["verdict"] == "fail" and doc["stage"] == "baseline", out
    assert doc["baseline"]["verdict"] == "differs" and "critic/score/mean" in doc["cause"]
    assert doc["comparison"] is not None and (slurm_site.dir / "run2" / "compare.png").is_file()
    # the stack side by side: what the job's nodes have beside the earlier run's
    stack = doc["health"]["stack"]
    assert stack["hosts"] == ["n1", "n2"] and stack["rows"]["ray"][0] not in ("-", "2.49.2")
    assert stack["compared"]["ray"] == [stack["rows"]["ray"][0], "2.49.2"]
    assert stack["compared"]["python"][1] == "3.9.0"
    assert json.loads((slurm_site.dir / "run2" / "validate.json").read_text())["baseline"]["verdict"] == "differs"


def test_a_training_run_without_checks_records_every_node_s_stack_for_a_later_compare(slurm_site: SlurmSite) -> None:
    """As an ssh run always does: no --compare, no --checks, no health profile, and the report
    still holds the stack each node's Ray step found, which a later --compare sets beside its own."""
    from patchctl.validate.checks.runner import earlier_stack

    prepare(slurm_site)
    code, doc, out = validate(slurm_site, "--ray-cpus", "1")
    assert code == 0, out
    stack = doc["health"]["stack"]
    assert stack["hosts"] == ["n1", "n2"]
    assert stack["rows"]["python"] == [platform.python_version()] * 2
    assert stack["rows"]["ray"][0] not in ("-", None) and len(set(stack["rows"]["ray"])) == 1
    assert stack["mismatches"] == []
    # what --compare reads of this run
    assert earlier_stack(slurm_site.dir / "run" / "report.json") == stack


def prepare_own_roots(site: SlurmSite, extra: str = "") -> int:
    site.config(extra, shared=False)
    code, out = run("migrate", "hpc", "--config", str(site.dir / "patchctl.toml"), "--target", str(site.tree))
    assert code == 0, out
    return code


def spawn(site: SlurmSite, *args: str) -> subprocess.Popen[str]:
    """``patchctl validate hpc`` as a child in a session of its own (a terminal's foreground job)."""
    config, out = str(site.dir / "patchctl.toml"), str(site.dir / "run")
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "patchctl",
            "validate",
            "hpc",
            "--config",
            config,
            "--out",
            out,
            "--ray-cpus",
            "1",
            *args,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )


def wait_for(child: subprocess.Popen[str], text: str, timeout: float = 180.0) -> list[str]:
    """The child's lines up to the first holding ``text``."""
    seen: list[str] = []
    deadline = time.monotonic() + timeout
    assert child.stdout is not None
    while time.monotonic() < deadline:
        line = child.stdout.readline()
        if not line:
            break
        seen.append(line)
        if text in line:
            return seen
    raise AssertionError(f"no {text!r} in: {''.join(seen)}")


def finish(child: subprocess.Popen[str], timeout: float = 240.0) -> tuple[int, str]:
    out, _ = child.communicate(timeout=timeout)
    return child.returncode, out


def top_finding(site: SlurmSite) -> str:
    """doctor's top finding in the job's output as it came home (the real lines Slurm printed)."""
    from patchctl.doctor import diagnose, load_signatures

    lines = (site.dir / "run" / "job.out").read_text().splitlines()
    return diagnose(lines, load_signatures()).matches[0].signature.id


def one_error(out: str) -> str:
    """The error line, checking it is the only line but the default profile's pick (said on stderr
    when validate runs without --profile)."""
    lines = [ln for ln in out.splitlines() if ln.strip()]
    assert all(ln.startswith("validate: profile ") for ln in lines[:-1]), out
    return lines[-1]


def last_line(out: str) -> str:
    return [ln for ln in out.splitlines() if ln.strip()][-1]


#: a trainer that steps for minutes, so the job is surely mid-training when the test acts
LONG = ("trainer.total_training_steps=600", "+standin.step_seconds=0.5")


def test_a_partition_slurm_does_not_know_is_refused_with_sbatch_s_message(slurm_site: SlurmSite) -> None:
    prepare(slurm_site)
    slurm_site.config().write_text(slurm_site.config().read_text().replace('partition = "debug"', 'partition = "nope"'))
    code, out = run("validate", "hpc", "--config", str(slurm_site.dir / "patchctl.toml"))
    assert code == 2, out
    assert one_error(out) == (
        "error: hpc: sbatch on node1 refused the job: Batch job submission failed: Invalid partition name "
        "specified; fix the cluster's partition, account, qos, time or sbatch options"
    )
    assert slurm_site.slurm.cluster.jobs() == []


def test_a_job_still_pending_after_the_queue_timeout_is_cancelled(slurm_site: SlurmSite) -> None:
    prepare(slurm_site)
    slurm_site.slurm.cluster.run("scontrol", "update", "NodeName=n2", "State=DRAIN", "Reason=patchctl-test")
    code, out = run("validate", "hpc", "--config", str(slurm_site.dir / "patchctl.toml"), "--queue-timeout", "3")
    assert code == 1, out
    (job,) = {ln.split("job ", 1)[1].split(":")[0] for ln in out.splitlines() if "queue  job " in ln}
    assert f"queue  job {job}: PENDING (Nodes_required_for_job_are_DOWN,_DRAINED" in out  # live, with the reason
    assert last_line(out).startswith(f"validate: FAIL — job {job} still PENDING (Nodes_required_for_job")
    assert last_line(out).endswith("(--queue-timeout 3); cancelled")
    assert slurm_site.slurm.cluster.jobs() == []


def test_the_time_limit_ends_the_run_in_one_line(slurm_site: SlurmSite) -> None:
    prepare(slurm_site)
    slurm_site.config().write_text(slurm_site.config().read_text().replace('time = "00:05:00"', 'time = "0:40"'))
    code, out = finish(spawn(slurm_site, *LONG))
    assert code == 1, out
    assert "hit its time limit (0:40) during training; raise the cluster's time" in last_line(out)
    assert last_line(out).startswith("validate: FAIL — job ")
    assert top_finding(slurm_site) == "slurm-time-limit"


def test_a_node_lost_mid_job_ends_the_run_in_one_line(slurm_site: SlurmSite) -> None:
    prepare(slurm_site)
    child = spawn(slurm_site, *LONG)
    wait_for(child, "train  step")
    slurm_site.slurm.cluster.slurmd["n2"].kill()  # our own slurmd's pid, as a machine losing power
    code, out = finish(child)
    assert code == 1, out
    assert "lost node n2 (NODE_FAIL) during training; see `sinfo -R`" in last_line(out)
    assert top_finding(slurm_site) == "slurm-node-failure"


def test_a_job_cancelled_from_outside_ends_the_run_in_one_line(slurm_site: SlurmSite) -> None:
    prepare(slurm_site)
    child = spawn(slurm_site, *LONG)
    wait_for(child, "train  step")
    (job,) = slurm_site.slurm.cluster.jobs()
    slurm_site.slurm.cluster.run("scancel", job)
    code, out = finish(child)
    assert code == 1, out
    assert last_line(out) == f"validate: FAIL — job {job} was cancelled by someone else (scancel) during training"


def test_sigterm_cancels_the_job_and_leaves_nothing_running(slurm_site: SlurmSite) -> None:
    prepare(slurm_site)
    child = spawn(slurm_site, *LONG)
    wait_for(child, "train  step")
    (job,) = slurm_site.slurm.cluster.jobs()
    child.send_signal(signal.SIGTERM)
    code, out = finish(child)
    assert code == 130, out
    assert f"interrupted (Ctrl-C) while job {job} ran; it was cancelled (scancel)" in last_line(out)
    assert slurm_site.slurm.cluster.jobs() == []
    state = slurm_site.slurm.cluster.run("scontrol", "show", "job", "-o", job).stdout
    assert "JobState=CANCELLED" in state
    # and no Ray or trainer process left: the fixture's teardown asserts it for every test


def test_a_job_whose_preflight_fails_starts_no_ray_and_says_why(slurm_site: SlurmSite) -> None:
    prepare(slurm_site, 'env = { CUDA_VISIBLE_DEVICES = "0" }\n')
    code, out = run(
        "validate", "hpc", "--config", str(slurm_site.dir / "patchctl.toml"), "--out", str(slurm_site.dir / "run")
    )
    assert code == 1, out
    assert last_line(out).startswith(
        "validate: FAIL — n1: preflight check 'slurm-cuda-visible' failed: "
        "the cluster's env sets CUDA_VISIBLE_DEVICES=0"
    )
    assert "ray-up" not in out


def test_more_ray_cpus_than_cpus_per_task_is_refused_before_submitting(slurm_site: SlurmSite) -> None:
    slurm_site.config()
    code, out = run("validate", "hpc", "--config", str(slurm_site.dir / "patchctl.toml"), "--ray-cpus", "4")
    assert code == 2, out
    assert one_error(out) == (
        "error: hpc: --ray-cpus 4 is more than cpus_per_task = 1 on a Slurm cluster; pass --ray-cpus 1 or less, "
        "or raise cpus_per_task"
    )
    assert slurm_site.slurm.cluster.jobs() == []
