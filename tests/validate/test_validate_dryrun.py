"""``validate --dry-run`` prints the trainer's command exactly as the head then runs it (issue 40
req 6): the head's verl version (its adaptations) and the paths of patchctl's package on the host."""

from __future__ import annotations

import json
import re

from validate_helpers import Site, host_entry

#: the run folder's time stamp: the dry run and the run are planned seconds apart
_STAMP = re.compile(r"validate-smoke-\d{8}-\d{6}")


def _same(argv: list[str]) -> list[str]:
    return [_STAMP.sub("validate-smoke-STAMP", a) for a in argv]


def test_the_dry_run_prints_the_command_the_head_runs(site: Site) -> None:
    cluster = site.cluster([host_entry("node1", site.root("node1"), "0")])
    site.migrate(cluster)
    planned = site.validate("--dry-run", "--json")
    assert planned.exit_code == 0, planned.output
    dry = json.loads(planned.output[planned.output.index("{") :])["trainer_command"]
    code, doc, out = site.run_json()
    assert code == 0, out
    ran = doc["trained"]["command"]
    assert _same(dry) == _same(ran), (dry, ran)
    # the reward file is the one shipped into the head's tree, not this machine's package
    reward = next(a for a in dry if "smoke_reward.py" in a)
    assert str(site.root("node1") / ".patchctl" / "validate" / "pkg" / "patchctl") in reward, reward


def test_the_dry_run_adapts_the_profile_to_the_head_s_verl_version(site: Site) -> None:
    """The version is the head's (read over ssh), not unknown: verl >= 0.9's adaptations appear."""
    cluster = site.cluster([host_entry("node1", site.root("node1"), "0")])
    site.migrate(cluster)
    (site.root("node1") / "verl" / "version" / "version").write_text("0.9.1\n")
    planned = site.validate("--dry-run", "--json", "--profile", "smoke-vllm")
    assert planned.exit_code == 0, planned.output
    argv = json.loads(planned.output[planned.output.index("{") :])["trainer_command"]
    assert (
        "reward.num_workers=1" in argv
        and "+actor_rollout_ref.rollout.engine_kwargs.vllm.distributed_executor_backend=uni" in argv
    ), argv
    pkg = str(site.root("node1") / ".patchctl" / "validate" / "pkg" / "patchctl" / "train")
    assert f"reward.custom_reward_function.path={pkg}/smoke_reward.py" in argv, argv
