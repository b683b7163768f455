"""A tagged file git ignores is never passed over unseen: captured with a note, or named with the reason."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from click.testing import CliRunner

from patchctl import releases
from patchctl.cli.main import cli

#: the lines of verl's own .gitignore that issue 15 names
GITIGNORE = "lib/\noutputs\ntmp/\n"
PROBE = "def probe():  # Uky: what the node sees\n    return 1\n"


def test_tagged_ignored_files_are_captured_or_named(release_tree, tmp_path: Path) -> None:
    fork = release_tree("0.6.1")
    files = {
        ".gitignore": GITIGNORE.encode(),
        "tmp/probe.py": PROBE.encode(),
        "verl/utils/lib/extra.py": b"EXTRA = 1  # Uky\n",
        "outputs/run.log": b"step 1 loss 0.5\n",  # untagged output: not the fork's edit
        "outputs/state.bin": b"\x00\x01# Uky\x00",  # tagged, and binary: shipped as a blob
        "outputs/big.log": b"x" * (2 << 20),
    }
    for rel, data in files.items():
        (fork / rel).parent.mkdir(parents=True, exist_ok=True)
        (fork / rel).write_bytes(data)
    result = CliRunner().invoke(
        cli, ["capture", "--from", str(fork), "--base", "verl==0.6.1", "--out", str(tmp_path / "mine"), "--json"]
    )
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert {(p["id"], p["kind"], p["path"]) for p in doc["patches"]} == {
        ("probe", "add-file", "tmp/probe.py"),
        ("extra", "add-file", "verl/utils/lib/extra.py"),
        ("state-bin", "blob", "outputs/state.bin"),
    }
    assert doc["notes"] == [
        "outputs/state.bin: git ignores it in FORK (.gitignore:2: outputs), but it carries the tag: "
        "captured as state-bin",
        "tmp/probe.py: git ignores it in FORK (.gitignore:3: tmp/), but it carries the tag: captured as probe",
        "verl/utils/lib/extra.py: git ignores it in FORK (.gitignore:1: lib/), but it carries the tag: "
        "captured as extra",
        "1 file(s) git ignores are over 1 MiB and were not searched for the tag (first: outputs/big.log)",
    ]
    pristine = tmp_path / "pristine"
    shutil.copytree(releases.materialize("0.6.1"), pristine, symlinks=True)
    result = CliRunner().invoke(cli, ["apply", "--target", str(pristine), "--patchset", str(tmp_path / "mine")])
    assert result.exit_code == 0, result.output
    assert (pristine / "tmp/probe.py").read_text() == PROBE
