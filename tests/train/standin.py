"""Stand-in verl trees for the train tests: a fake ``main_ppo`` that prints a real run's log,
with the real ``_generated_ppo_trainer.yaml`` of the release it stands for, so the override
check runs against verl's own keys."""

from __future__ import annotations

import shutil
from pathlib import Path

FIXTURES = Path(__file__).parent / "fixtures"
#: the smoke profile's command as it is: two mini-batches per step, so actor/ppo_kl above 0 (H100,
#: 2026-11-24, docs/validation/vllm-smoke/runs4/f-healthy-1-fresh-report.json); smoke_h200_pass.log
#: is the one-mini-batch profile's, whose ppo_kl of 0 update-applied now reads as a skipped step
FIXTURE = FIXTURES / "smoke_h100_two_minibatch_pass.log"
#: verl's composed trainer config, copied from the releases' sdists
CONFIGS = {v: FIXTURES / "config" / f"verl-{v}.yaml" for v in ("0.5.0", "0.6.1")}
TRAINER = """
import os, re, sys, time
mode = os.environ.get("FAKE_MODE", "pass")
lines = open(os.environ["FAKE_LOG"], encoding="utf-8").read().splitlines()
if mode == "hang":
    time.sleep(60)
if mode == "fail":
    print("(WorkerDict pid=7) ModuleNotFoundError: No module named 'flash_attn'", flush=True)
    sys.exit(3)
assert os.getcwd() == os.environ["PYTHONPATH"].split(os.pathsep)[0]
steps = int(os.environ.get("FAKE_STEPS", "40"))
for line in lines:
    if "step:" in line:
        continue
    print(re.sub(r"Total training steps: \\d+", f"Total training steps: {steps}", line), flush=True)
step_lines = [l for l in lines if "step:" in l]
for i in range(steps):
    print(step_lines[min(i, len(step_lines) - 1)].replace(f"step:{min(i, len(step_lines) - 1) + 1} ", f"step:{i + 1} "),
          flush=True)
print(" ".join(sys.argv[1:]), file=open(os.environ["FAKE_ARGV"], "w"))
"""


def stand_in(root: Path, version: str = "0.5.0") -> Path:
    """A verl tree of ``version`` whose main_ppo is :data:`TRAINER` and whose config is the release's."""
    config = root / "verl/trainer/config"
    config.mkdir(parents=True)
    (root / "verl/version").mkdir()
    (root / "verl/version/version").write_text(version + "\n")
    (root / "verl/__init__.py").write_text("")
    (root / "verl/trainer/__init__.py").write_text("")
    shutil.copyfile(CONFIGS[version], config / "_generated_ppo_trainer.yaml")
    # what launcher.has_ray_kwargs reads: 0.5 has ray_init at the top, 0.6 under ray_kwargs
    (config / "ppo_trainer.yaml").write_text(
        "ray_init:\n  num_cpus: null\n" if version == "0.5.0" else "ray_kwargs:\n  ray_init:\n    num_cpus: null\n"
    )
    (root / "verl/trainer/main_ppo.py").write_text(TRAINER)
    return root
