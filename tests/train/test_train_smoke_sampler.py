"""smoke-vllm's quick-polling replay buffer (train/smoke_sampler.py), against verl 0.9.1's own code."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

from patchctl.train import smoke
from patchctl.train.profiles import adapt, load_profile


def test_verl_091s_replay_buffer_takes_the_poll_interval_it_sets(release_cache: Path) -> None:
    """The constructor keyword the sampler overrides exists in the release, defaulting to the 2 s it cuts."""
    from patchctl import releases

    source = (releases.materialize("0.9.1") / "verl/trainer/ppo/v1/replay_buffer.py").read_text()
    init = next(
        n
        for c in ast.walk(ast.parse(source))
        if isinstance(c, ast.ClassDef) and c.name == "ReplayBuffer"
        for n in c.body
        if isinstance(n, ast.FunctionDef) and n.name == "__init__"
    )
    names = [a.arg for a in init.args.args]
    defaults = dict(zip(names[len(names) - len(init.args.defaults) :], init.args.defaults, strict=True))
    assert ast.literal_eval(defaults["poll_interval"]) == 2.0


def test_the_sampler_stands_alone_and_polls_quickly(tmp_path: Path) -> None:
    """verl imports the file by path, in its own interpreter: no patchctl, verl's class under it."""
    pkg = tmp_path / "verl/trainer/ppo/v1"
    pkg.mkdir(parents=True)
    for d in (tmp_path / "verl", tmp_path / "verl/trainer", tmp_path / "verl/trainer/ppo", pkg):
        (d / "__init__.py").write_text("")
    (pkg / "replay_buffer.py").write_text(
        "class ReplayBuffer:\n    def __init__(self, trainer_mode, poll_interval=2.0, **kw):\n"
        "        self.trainer_mode, self.poll_interval = trainer_mode, poll_interval\n"
    )
    probe = (
        "import importlib.util, sys\n"
        "spec = importlib.util.spec_from_file_location('s', sys.argv[1])\n"
        "m = importlib.util.module_from_spec(spec)\n"
        "spec.loader.exec_module(m)\n"
        "b = m.QuickPollReplayBuffer(trainer_mode='sync', refill_fn=None)\n"
        "print(b.trainer_mode, b.poll_interval, 'patchctl' in sys.modules)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe, str(smoke.sampler_file())],
        env={"PYTHONPATH": str(tmp_path)},
        capture_output=True,
        text=True,
        check=True,
    )
    assert done.stdout.split() == ["sync", "0.05", "False"]


def test_smoke_vllm_uses_it_on_verl_09_only() -> None:
    profile = load_profile("smoke-vllm")
    on09, _ = adapt(profile, "0.9.1")
    assert "trainer.v1.sampler.custom_sampler.path={SAMPLER_FILE}" in on09.overrides
    assert "trainer.v1.sampler.custom_sampler.name=QuickPollReplayBuffer" in on09.overrides
    on07, _ = adapt(profile, "0.7.0")
    assert not any("custom_sampler" in o for o in on07.overrides)
    assert smoke.paths(Path("/a"))["SAMPLER_FILE"] == str(smoke.sampler_file())
