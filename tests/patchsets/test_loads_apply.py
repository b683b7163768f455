"""Never silently broken (issue 38): a patch whose change leaves its file unloadable, or lands in
the wrong YAML section, or adds a method the class defines again further down, is a conflict
that names the problem, and nothing is written; ``verify`` runs the same check.

Each case is a fork of the real verl 0.6.1, captured with ``patchctl capture``, applied to a
0.6.1 tree that upstream changed the way a later release does. The YAML cases are the two the
issue reports from real forks (Skywork-OR1, TinyZero, Search-R1): edits of ``ppo_trainer.yaml``
carried as text hunks, once placed inside the ``trainer:`` section, once beside upstream's own
copy of the key.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from tests.clirun import run
from tests.conftest import git, snapshot

YAML = "verl/trainer/config/ppo_trainer.yaml"
#: an edit no key holds: capture carries the file as text hunks, as the issue's forks had it
TOP = ("# Format checks enforced on CI:\n", "# Uky: tuned for one GPU\n# Format checks enforced on CI:\n")
LAST_TRAINER_KEY = "  use_legacy_worker_impl: auto\n"
#: upstream adds a key at the end of trainer:, as later releases do
UPSTREAM_TIMEOUT = (
    LAST_TRAINER_KEY,
    LAST_TRAINER_KEY + "\n  # Seconds to wait for a rollout\n  rollout_timeout: 600\n",
)


def edit(tree: Path, rel: str, *changes: tuple[str, str]) -> None:
    """Replace each text once (it must be there once); committed where the tree is a checkout."""
    path = tree / rel
    text = path.read_text(encoding="utf-8")
    for old, new in changes:
        assert text.count(old) == 1, old
        text = text.replace(old, new)
    path.write_text(text, encoding="utf-8")
    if (tree / ".git").exists():
        git(tree, "commit", "-qam", "upstream")


@pytest.fixture
def fork(tmp_path: Path) -> Path:
    from patchctl import releases

    dest = tmp_path / "fork"
    shutil.copytree(releases.materialize("0.6.1"), dest, symlinks=True)
    shutil.rmtree(dest / ".git")
    return dest


def capture(fork: Path, out: Path) -> Path:
    code, text = run("capture", "--from", str(fork), "--base", "verl==0.6.1", "--out", str(out))
    assert code == 0, text
    return out


def refused(tree: Path, ps: Path, *needles: str) -> dict[str, str]:
    """Apply refuses with exit 1, one conflict naming ``needles``, and leaves the tree as it was."""
    before = snapshot(tree)
    code, out = run("apply", "--target", str(tree), "--patchset", str(ps), "--json")
    rows = json.loads(out)["results"]
    bad = [r for r in rows if r["status"] == "conflict"]
    assert code == 1 and len(bad) == 1, out
    assert all(n in bad[0]["reason"] for n in needles), bad[0]["reason"]
    assert snapshot(tree) == before
    return bad[0]


def test_a_hunk_that_lands_inside_the_trainer_section_is_a_conflict(fork: Path, release_tree, tmp_path: Path) -> None:
    """The fork adds a top-level key after trainer:; upstream added keys at the end of trainer:, so
    the hunk's context (with fuzz) fits in the middle of the section and the file no longer parses."""
    edit(fork, YAML, TOP, (LAST_TRAINER_KEY, LAST_TRAINER_KEY + "uky_debug: true  # Uky\n"))
    ps = capture(fork, tmp_path / "ps")
    tree = release_tree("0.6.1")
    edit(tree, YAML, UPSTREAM_TIMEOUT)
    row = refused(tree, ps, "would not load as YAML after the change: did not find expected key", YAML)
    assert "+uky_debug: true  # Uky" in row["detail"]  # the refused change is shown
    code, out = run("apply", "--target", str(tree), "--patchset", str(ps), "--dry-run", "--json")
    assert code == 1 and [r["status"] for r in json.loads(out)["results"]].count("conflict") == 1
    # with markers the hunk is shown at the place it would have gone, for the user to resolve
    code, out = run("apply", "--target", str(tree), "--patchset", str(ps), "--conflicts=markers", "--json")
    assert "conflict-marked" in [r["status"] for r in json.loads(out)["results"]], out


def test_a_key_added_beside_upstreams_own_copy_is_a_conflict(fork: Path, release_tree, tmp_path: Path) -> None:
    """The fork adds trainer.rollout_timeout; upstream added the same key further down: the hunk
    applies cleanly and OmegaConf would refuse the duplicate. matrix says so too."""
    edit(
        fork,
        YAML,
        TOP,
        ("  total_epochs: 30\n", "  total_epochs: 30\n\n  # Uky: stuck rollouts\n  rollout_timeout: 300  # Uky\n"),
    )
    ps = capture(fork, tmp_path / "ps")
    tree = release_tree("0.6.1")
    git(tree, "tag", "v1")
    edit(tree, YAML, UPSTREAM_TIMEOUT)
    git(tree, "tag", "v2")
    refused(tree, ps, "duplicate key 'rollout_timeout' (first at line 130), which OmegaConf refuses")
    code, out = run("matrix", "--repo", str(tree), "--versions", "v1,v2", "--patchset", str(ps))
    (line,) = [ln for ln in out.splitlines() if " on v2: conflict in " in ln]
    assert code == 1 and "duplicate key 'rollout_timeout'" in line, out


def test_a_hunk_that_would_take_upstreams_keys_into_its_own_is_a_conflict(
    fork: Path, release_tree, tmp_path: Path
) -> None:
    """As above, but the fork's new top-level key holds a mapping: the file would parse, with
    upstream's trainer.rollout_timeout silently moved under the fork's key."""
    edit(fork, YAML, TOP, (LAST_TRAINER_KEY, LAST_TRAINER_KEY + "uky_extra:\n  flag: true  # Uky\n"))
    ps = capture(fork, tmp_path / "ps")
    tree = release_tree("0.6.1")
    edit(tree, YAML, UPSTREAM_TIMEOUT)
    refused(tree, ps, f"{YAML}:215: upstream's 'rollout_timeout: 600' would move from key trainer to key uky_extra")


def test_a_hunk_whose_context_fits_another_section_is_a_conflict(fork: Path, release_tree, tmp_path: Path) -> None:
    """The fork adds trainer.uky_gpu_type after n_gpus_per_node; upstream changed that line in
    trainer: and added a section that has the hunk's context word for word: the file would
    load, with the key in the wrong section. capture keeps where the fork had the line."""
    gpus = "  # Number of GPUs per node\n  n_gpus_per_node: 8\n"
    edit(fork, YAML, TOP, (gpus, gpus + "\n  # Uky: our cards\n  uky_gpu_type: a100  # Uky\n"))
    ps = capture(fork, tmp_path / "ps")
    assert 'parent = ["trainer"]' in (ps / "patchset.toml").read_text(encoding="utf-8")
    tree = release_tree("0.6.1")
    section = (
        "# where the reward model runs\nreward_placement:\n\n  # Number of nodes used in the training\n  nnodes: 1\n\n"
        + gpus
        + "\n  # Save frequency (by iteration) for model checkpoints\n  save_freq: -1\n\n"
    )
    edit(
        tree,
        YAML,
        ("  n_gpus_per_node: 8\n", "  n_gpus_per_node: 4\n"),
        ("# config for the trainer\ntrainer:\n", section + "# config for the trainer\ntrainer:\n"),
    )
    refused(
        tree,
        ps,
        "the hunk's new line 'uky_gpu_type: a100  # Uky' would sit under key reward_placement, "
        "where the fork has it under key trainer",
    )


def test_a_toml_key_added_beside_upstreams_own_is_a_conflict(fork: Path, release_tree, tmp_path: Path) -> None:
    edit(
        fork,
        "pyproject.toml",
        ("# build-system\n", "# build-system (Uky: our pins)\n"),
        ('follow_imports = "skip"\n', 'follow_imports = "skip"\nwarn_unused_configs = true  # Uky\n'),
    )
    ps = capture(fork, tmp_path / "ps")
    tree = release_tree("0.6.1")
    pretty = "pretty            = true\n"
    edit(tree, "pyproject.toml", (pretty, pretty + "warn_unused_configs = false\n"))
    refused(tree, ps, "pyproject.toml:", "would not load as TOML after the change: Cannot overwrite a value")


def test_a_python_change_that_no_longer_compiles_is_a_conflict(fork: Path, release_tree, tmp_path: Path) -> None:
    """The fork awaits in an async method; upstream made the method synchronous. The statement
    still parses there, but Python refuses to compile it: the structural kind alone let it through."""
    server = "verl/workers/rollout/vllm_rollout/vllm_async_server.py"
    line = "        handshake_address = get_tcp_uri(host, port)\n"
    edit(fork, server, (line, line + "        await asyncio.sleep(0)  # Uky: let the port settle\n"))
    ps = capture(fork, tmp_path / "ps")
    tree = release_tree("0.6.1")
    edit(tree, server, ("    async def run_headless(self", "    def run_headless(self"))
    refused(tree, ps, "would not compile after the change: 'await' outside async function")


def test_a_method_the_class_defines_again_further_down_is_a_conflict(fork: Path, release_tree, tmp_path: Path) -> None:
    """The fork adds Tracking.finish; upstream added its own finish at the end of the class. Python
    keeps the later definition, so the fork's would never run."""
    tracking = "verl/utils/tracking.py"
    anchor = '    def __del__(self):\n        if "wandb" in self.logger:\n'
    mine = "    def finish(self):  # Uky: close the loggers before exit\n        self.__del__()  # Uky\n\n"
    edit(fork, tracking, (anchor, mine + anchor))
    ps = capture(fork, tmp_path / "ps")
    tree = release_tree("0.6.1")
    last = '        if "file" in self.logger:\n            self.logger["file"].finish()\n'
    edit(tree, tracking, (last, last + "\n    def finish(self):\n        self.logger.clear()\n"))
    refused(tree, ps, "class Tracking would define finish twice", "the one at line 158 would never run")


def test_verify_fails_once_a_patched_file_no_longer_loads(release_tree, tmp_path: Path) -> None:
    """Apply is clean; then a hand edit elsewhere in the file breaks it: verify fails (exit 1) and
    names the file and the problem, for a YAML and a Python file alike."""
    ps = tmp_path / "ps"
    ps.mkdir()
    (ps / "patchset.toml").write_text(
        '[patchset]\nname = "ps"\ntag = "Uky"\n'
        '[[patch]]\nid = "epochs"\ntitle = "t"\nwhy = "w"\nkind = "config-key"\n'
        f'target = ["{YAML}"]\n[patch.params]\npath = ["trainer", "total_epochs"]\n'
        'was = "total_epochs: 30\\n"\nnow = "total_epochs: 3  # Uky\\n"\n'
        '[[patch]]\nid = "log"\ntitle = "t"\nwhy = "w"\nkind = "prelude"\n'
        'target = ["verl/utils/tracking.py"]\n[patch.params]\nblock = "import os  # Uky"\n',
        encoding="utf-8",
    )
    tree = release_tree("0.6.1")
    code, out = run("apply", "--target", str(tree), "--patchset", str(ps))
    assert code == 0, out
    assert run("verify", "--target", str(tree), "--patchset", str(ps))[0] == 0
    edit(tree, YAML, ("  nnodes: 1\n", "  nnodes: 1\n  val_only: True\n"))
    code, out = run("verify", "--target", str(tree), "--patchset", str(ps), "--json")
    rows = {r["patch"]: r for r in json.loads(out)["patches"]}
    assert code == 1 and rows["epochs"]["status"] == "modified", out
    assert rows["epochs"]["reason"].endswith(
        "; but verl/trainer/config/ppo_trainer.yaml:179: does not load as YAML: duplicate key 'val_only' (first at "
        "line 151), which OmegaConf refuses: fix the file by hand, or restore it and apply again"
    )
    assert rows["log"]["status"] == "present"
    edit(tree, "verl/utils/tracking.py", ("    def log(self, data, step, backend=None):\n", "    def log(self, data\n"))
    code, out = run("verify", "--target", str(tree), "--patchset", str(ps), "--json")
    rows = {r["patch"]: r for r in json.loads(out)["patches"]}
    assert code == 1 and rows["log"]["status"] == "modified", out
    assert "verl/utils/tracking.py:" in rows["log"]["reason"] and "not valid Python" in rows["log"]["reason"]


def test_a_file_upstream_ships_unloadable_is_noted_not_refused(release_tree, tmp_path: Path) -> None:
    """A duplicate key upstream already has is not the patch's doing: apply applies with a note, and
    verify passes with the same note (the file is as patchctl found it, patches taken out)."""
    ps = tmp_path / "ps"
    ps.mkdir()
    (ps / "patchset.toml").write_text(
        '[patchset]\nname = "ps"\ntag = "Uky"\n'
        '[[patch]]\nid = "epochs"\ntitle = "t"\nwhy = "w"\nkind = "config-key"\n'
        f'target = ["{YAML}"]\n[patch.params]\npath = ["trainer", "total_epochs"]\n'
        'was = "total_epochs: 30\\n"\nnow = "total_epochs: 3  # Uky\\n"\n',
        encoding="utf-8",
    )
    tree = release_tree("0.6.1")
    edit(tree, YAML, ("  nnodes: 1\n", "  nnodes: 1\n  val_only: True\n"))
    code, out = run("apply", "--target", str(tree), "--patchset", str(ps), "--json")
    (row,) = json.loads(out)["results"]
    assert code == 0 and row["status"] == "applied", out
    assert (
        "note: verl/trainer/config/ppo_trainer.yaml:179: does not load as YAML: duplicate key 'val_only'"
        in (row["reason"])
    )
    assert "total_epochs: 3  # Uky" in (tree / YAML).read_text(encoding="utf-8")
    code, out = run("verify", "--target", str(tree), "--patchset", str(ps), "--json")
    (row,) = json.loads(out)["patches"]
    assert code == 0 and row["status"] == "present" and "as upstream shipped it" in row["reason"], out
