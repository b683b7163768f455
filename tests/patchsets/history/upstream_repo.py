"""A small verl-like upstream whose history renames a file, moves a function and removes one.

``v0.1.0`` is the fork's base; between it and ``v0.2.0`` upstream, in named commits:

- renames ``verl/trainer/ppo.py`` to ``verl/trainer/ppo_trainer.py`` (and then edits ``fit``);
- moves ``reduce_metrics`` out of ``verl/utils/metrics.py`` into a new ``verl/utils/reduce.py``;
- removes ``legacy_timer``, some of its lines going into a rewritten ``verl/utils/profiling.py:Timer.timed``;
- and adds unrelated commits around them.

The fork (a checkout of ``v0.1.0`` with ``# Uky`` edits) is captured by the real ``capture``.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.drift.helpers import Repo, git, invoke

PPO = """\
import os


class Trainer:
    def __init__(self, config):
        self.config = config
        self.step = 0

    def fit(self):
        for batch in self.loader():
            loss = self.update(batch)
            self.step += 1
        return self.step

    def update(self, batch):
        out = self.model(batch)
        return out.loss

    def save(self, path):
        os.makedirs(path, exist_ok=True)
        self.model.save(path)
"""

METRICS = """\
import time


def reduce_metrics(metrics):
    out = {}
    for key, values in metrics.items():
        out[key] = sum(values) / len(values)
    return out


def legacy_timer(name):
    start = time.time()
    yield
    elapsed = time.time() - start
    print(name, elapsed)


def count(items):
    return len(items)
"""

#: (file, old, new) of the fork's edits
FORK = [
    (
        "verl/trainer/ppo.py",
        "            loss = self.update(batch)\n",
        '            loss = self.update(batch)\n            print("loss", loss)  # Uky: log every step\n',
    ),
    (
        "verl/utils/metrics.py",
        "        out[key] = sum(values) / len(values)\n",
        "        out[key] = max(values)  # Uky: the peak, not the mean\n",
    ),
    (
        "verl/utils/metrics.py",
        "    elapsed = time.time() - start\n",
        "    elapsed = time.time() - start\n    print('timer done')  # Uky\n",
    ),
]


def build(root: Path) -> dict[str, str]:
    """The upstream repository at ``root``; returns the commits by what they did."""
    repo = Repo(root)
    shas = {"initial": git(root, "rev-parse", "HEAD")}
    shas["base"] = repo.commit(
        {"verl/trainer/ppo.py": PPO, "verl/utils/metrics.py": METRICS}, "Trainer and metrics (#100)", tag="v0.1.0"
    )
    repo.filler(3, "docs")
    git(root, "mv", "verl/trainer/ppo.py", "verl/trainer/ppo_trainer.py")
    shas["rename"] = repo.commit({}, "Rename the PPO trainer module (#101)")
    shas["fit"] = repo.commit(
        {
            "verl/trainer/ppo_trainer.py": PPO.replace(
                "for batch in self.loader():", "for batch in self.loader(epoch=0):"
            )
        },
        "fit: name the epoch (#102)",
    )
    repo.filler(2, "notes")
    fitted = PPO.replace("for batch in self.loader():", "for batch in self.loader(epoch=0):")
    shas["returns"] = repo.commit(
        {
            "verl/trainer/ppo_trainer.py": fitted.replace(
                "        return self.step\n", "        return self.step  # done\n"
            )
        },
        "fit: say what it returns (#106)",
    )
    moved = METRICS.replace(
        "def reduce_metrics(metrics):\n    out = {}\n    for key, values in metrics.items():\n"
        "        out[key] = sum(values) / len(values)\n    return out\n\n\n",
        "",
    )
    reduce = (
        '"""Reducing metrics over a step."""\n\n\n'
        "def reduce_metrics(metrics):\n    out = {}\n    for key, values in metrics.items():\n"
        "        out[key] = sum(values) / len(values)\n    return out\n"
    )
    shas["move"] = repo.commit(
        {"verl/utils/metrics.py": moved, "verl/utils/reduce.py": reduce}, "Move reduce_metrics to its own module (#103)"
    )
    repo.filler(2, "chore")
    gone = moved.replace(
        "def legacy_timer(name):\n    start = time.time()\n    yield\n    elapsed = time.time() - start\n"
        "    print(name, elapsed)\n\n\n",
        "",
    )
    # a rewrite that keeps three of legacy_timer's lines: too unlike it to be legacy_timer renamed
    # (scopes.RENAMED), alike enough to be named as where its code went
    profiling = (
        "import time\n\n\nclass Timer:\n    def __init__(self):\n        self.total = 0.0\n\n"
        "    def timed(self, name, log):\n        start = time.time()\n        try:\n            yield\n"
        "        finally:\n            elapsed = time.time() - start\n            self.total += elapsed\n"
        '            log.info("%s took %.3f s", name, elapsed)\n'
    )
    shas["remove"] = repo.commit(
        {"verl/utils/metrics.py": gone, "verl/utils/profiling.py": profiling}, "Drop the legacy timer (#104)"
    )
    shas["target"] = repo.commit({"verl/version/version": "0.2.0\n"}, "Release 0.2.0", tag="v0.2.0")
    return shas


def fork_of(upstream: Path, where: Path) -> Path:
    """A clone of upstream at ``v0.1.0`` with the fork's edits, committed."""
    subprocess.run(["git", "clone", "-q", "--no-hardlinks", str(upstream), str(where)], check=True)
    git(where, "checkout", "-q", "-b", "fork", "v0.1.0")
    for rel, old, new in FORK:
        path = where / rel
        text = path.read_text()
        assert text.count(old) == 1, (rel, old)
        path.write_text(text.replace(old, new))
    git(where, "commit", "-q", "-am", "fork edits")
    return where


def captured(upstream: Path, tmp: Path) -> Path:
    """The fork's edits captured by ``patchctl capture`` against ``v0.1.0``."""
    fork = fork_of(upstream, tmp / "fork")
    out = tmp / "ps"
    done = invoke("capture", "--from", str(fork), "--base", "v0.1.0", "--out", str(out), "--name", "fork")
    assert done.exit_code == 0, done.output
    return out


def checkout(upstream: Path, ref: str, where: Path) -> Path:
    subprocess.run(["git", "clone", "-q", "--no-hardlinks", str(upstream), str(where)], check=True)
    git(where, "checkout", "-q", ref)
    return where
