"""Formatting never decides (issue 27, requirement 3), shown on real verl 0.6.1 files.

The fork was made from a BASE that spells things the old way (``'trackio'``, ``'wandb'``,
``0.``, ``1.``); upstream (verl 0.6.1 itself) spells them ``"trackio"``, ``0.0``. The fork's
edits sit next to those lines: as anchors, or inside the statement that gets widened. Every
patch must apply, and the result must be upstream's file byte for byte with only the fork's
lines added.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from click.testing import CliRunner

from patchctl.cli.main import cli

GSM8K = "verl/utils/reward_score/gsm8k.py"
TRACKING = "verl/utils/tracking.py"

#: (file, upstream text, how BASE spelled it)
OLD_SPELLING = [
    (TRACKING, '        if "trackio" in default_backend:\n', "        if 'trackio' in default_backend:\n"),
    (TRACKING, '            self.logger["wandb"] = wandb\n', "            self.logger['wandb'] = wandb\n"),
    (GSM8K, 'method="strict", format_score=0.0, score=1.0):\n', "method='strict', format_score=0., score=1.):\n"),
]

#: (file, the line the fork's lines go after, the fork's lines)
INSERTS = [
    (
        TRACKING,
        '            self.logger["trackio"] = trackio\n',
        "\n        self.started = True  # Uky: after the trackio block\n",
    ),
    (
        TRACKING,
        (
            "            wandb.init(project=project_name, name=experiment_name, entity=entity, config=config, "
            "settings=settings)\n"
        ),
        '            wandb.define_metric("*", step_metric="step")  # Uky\n',
    ),
    (
        GSM8K,
        "            return format_score\n",
        (
            "\n\ndef score_all(items):  # Uky: batch helper\n"
            "    return [compute_score(*item) for item in items]  # Uky\n"
        ),
    ),
]


def run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, list(args))
    return result.exit_code, result.output


def rewrite(root: Path, rel: str, old: str, new: str) -> None:
    path = root / rel
    text = path.read_text(encoding="utf-8")
    assert text.count(old) == 1, (rel, old)
    path.write_text(text.replace(old, new), encoding="utf-8")


def insert(root: Path, old_first: bool) -> None:
    for rel, line, lines in INSERTS:
        spelled = next((b for f, a, b in OLD_SPELLING if f == rel and a == line), line) if old_first else line
        rewrite(root, rel, spelled, spelled + lines)


def test_upstream_respelling_near_the_anchors_neither_conflicts_nor_is_undone(release_tree, tmp_path: Path) -> None:
    base = release_tree("0.6.1")
    for rel, new, old in OLD_SPELLING:
        rewrite(base, rel, new, old)
    fork = tmp_path / "fork"
    shutil.copytree(base, fork, symlinks=True)
    insert(fork, old_first=True)
    code, out = run("capture", "--from", str(fork), "--base", str(base), "--out", str(tmp_path / "p"), "--json")
    assert code == 0, out
    assert len(json.loads(out)["patches"]) == 3, out

    target = tmp_path / "target"
    shutil.copytree(base, target, symlinks=True)
    for rel, new, old in OLD_SPELLING:
        rewrite(target, rel, old, new)
    want = tmp_path / "want"
    shutil.copytree(target, want, symlinks=True)
    insert(want, old_first=False)
    code, out = run("apply", "--target", str(target), "--patchset", str(tmp_path / "p"), "--json")
    assert code == 0, out
    assert {r["status"] for r in json.loads(out)["results"]} == {"applied"}, out
    for rel in (GSM8K, TRACKING):
        assert (target / rel).read_text() == (want / rel).read_text(), rel
