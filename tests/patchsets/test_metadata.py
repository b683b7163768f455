"""DEP-3 style metadata: `list` shows it; `apply` says when a patch is past its drop_when."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from patchctl.cli.main import cli

MANIFEST = """
[patchset]
name = "meta"
tag = "Uky"

[[patch]]
id = "note"
title = "ship a note"
why = "so the node says who patched it"
kind = "add-file"
target = ["NOTE.md"]
origin = "https://example.org/fork/commit/abc123"
forwarded = "no"
applied_upstream = "0.9.0"
drop_when = ">=0.8"
captured_against = "verl 0.6.1"
[patch.params]
source = "files/NOTE.md"
"""


def patchset(root: Path) -> Path:
    (root / "files").mkdir(parents=True)
    (root / "files" / "NOTE.md").write_text("patched  <!-- # Uky -->\n")
    (root / "patchset.toml").write_text(MANIFEST)
    return root


def verl_tree(root: Path, version: str) -> Path:
    (root / "verl" / "version").mkdir(parents=True)
    (root / "verl" / "__init__.py").write_text("")
    (root / "verl" / "version" / "version").write_text(version + "\n")
    return root


def test_list_shows_the_metadata(tmp_path: Path) -> None:
    ps = patchset(tmp_path / "ps")
    out = CliRunner().invoke(cli, ["list", "--patchset", str(ps), "--json"]).stdout
    note = json.loads(out)[0]["patches"][0]
    assert {k: note[k] for k in ("origin", "forwarded", "applied_upstream", "drop_when", "captured_against")} == {
        "origin": "https://example.org/fork/commit/abc123",
        "forwarded": "no",
        "applied_upstream": "0.9.0",
        "drop_when": ">=0.8",
        "captured_against": "verl 0.6.1",
    }
    human = CliRunner().invoke(cli, ["list", "--patchset", str(ps)]).output
    assert "    drop_when: >=0.8" in human and "    forwarded: no" in human


def test_apply_says_when_a_patch_is_past_drop_when(tmp_path: Path) -> None:
    ps = patchset(tmp_path / "ps")
    for version, past in (("0.7.0", False), ("0.8.1", True)):
        tree = verl_tree(tmp_path / version, version)
        doc = json.loads(
            CliRunner().invoke(cli, ["apply", "--target", str(tree), "--patchset", str(ps), "--json"]).stdout
        )
        (result,) = doc["results"]
        assert result["status"] == "applied"
        assert ("past drop_when >=0.8: consider removing this patch" in result["reason"]) is past
