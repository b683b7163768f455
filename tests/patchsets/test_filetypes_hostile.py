"""A malicious patchset of the new file kinds: rename sources, blob names and key paths never reach
outside the tree or into .git, and each refusal is one line naming the patch and key."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner
from tests.conftest import snapshot

from patchctl.cli.main import cli
from patchctl.errors import ManifestError
from patchctl.patchsets.loader import load_patchset


def patchset(root: Path, kind: str, target: str, params: str) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "patchset.toml").write_text(f"""[patchset]
name = "evil"
tag = "Uky"
[[patch]]
id = "evil"
title = "t"
why = "w"
kind = "{kind}"
target = ["{target}"]
[patch.params]
{params}
""")
    return root


def tree(root: Path) -> Path:
    (root / "scripts").mkdir(parents=True)
    (root / "scripts" / "run.sh").write_text("echo run\n")
    (root / "conf.yaml").write_text("a:\n  b: 1\n")
    (root / "verl").mkdir()
    (root / "verl" / "__init__.py").write_text("")
    return root


@pytest.mark.parametrize(
    "kind, target, params, key, says",
    [
        ("rename-file", "scripts/new.sh", 'source = "../outside.sh"', "params.source", "climbs out of the tree"),
        ("rename-file", "scripts/new.sh", 'source = "/etc/passwd"', "params.source", "is an absolute path"),
        ("rename-file", "scripts/new.sh", 'source = ".git/config"', "params.source", "is inside .git"),
        ("rename-file", ".git/hooks/pre-commit", 'source = "scripts/run.sh"', "patch[0].target[0]", "is inside .git"),
        ("delete-file", "../victim.txt", "", "patch[0].target[0]", "climbs out of the tree"),
        (
            "blob",
            "x.png",
            'source = "../../../etc/passwd"\nsha256 = "' + "0" * 64 + '"',
            "params.source",
            "climbs out of the tree",
        ),
        (
            "blob",
            ".git/index",
            'source = "files/x"\nsha256 = "' + "0" * 64 + '"',
            "patch[0].target[0]",
            "is inside .git",
        ),
        ("delete-file", "scripts/run.sh", 'sha256 = "nope"', "params.sha256", "is not a sha256"),
    ],
)
def test_the_loader_refuses_paths_out_of_the_tree(
    tmp_path: Path, kind: str, target: str, params: str, key: str, says: str
) -> None:
    root = patchset(tmp_path / "ps", kind, target, params)
    (root / "files").mkdir()
    (root / "files" / "x").write_bytes(b"\0")
    with pytest.raises(ManifestError) as err:
        load_patchset(root)
    assert key in str(err.value) and says in str(err.value) and "'evil'" in str(err.value)


def test_a_blob_reached_through_a_symlink_out_of_the_patchset_is_refused(tmp_path: Path) -> None:
    secret = tmp_path / "secret.bin"
    secret.write_bytes(b"\0secret")
    digest = hashlib.sha256(secret.read_bytes()).hexdigest()
    root = patchset(tmp_path / "ps", "blob", "x.bin", f'source = "files/x.bin"\nsha256 = "{digest}"')
    (root / "files").mkdir()
    os.symlink(secret, root / "files" / "x.bin")
    with pytest.raises(ManifestError, match="leads out of the patchset folder through a symlink"):
        load_patchset(root)


def test_a_blob_over_the_size_bound_is_refused(tmp_path: Path) -> None:
    root = patchset(tmp_path / "ps", "blob", "x.bin", 'source = "files/x.bin"\nsha256 = "' + "0" * 64 + '"')
    (root / "files").mkdir()
    with open(root / "files" / "x.bin", "wb") as f:
        f.truncate((16 << 20) + 1)
    with pytest.raises(ManifestError, match="over the 16 MiB a blob may have"):
        load_patchset(root)


def test_a_rename_source_that_is_a_symlink_out_of_the_tree_is_refused(tmp_path: Path) -> None:
    target = tree(tmp_path / "tree")
    outside = tmp_path / "outside.sh"
    outside.write_text("echo secret\n")
    os.symlink(outside, target / "scripts" / "link.sh")
    root = patchset(tmp_path / "ps", "rename-file", "scripts/stolen.sh", 'source = "scripts/link.sh"')
    before = snapshot(tmp_path)
    result = CliRunner().invoke(cli, ["apply", "--target", str(target), "--patchset", str(root)])
    assert result.exit_code != 0
    assert "scripts/link.sh" in result.output and "leads out of the tree through a symlink" in result.output
    assert snapshot(tmp_path) == before and outside.read_text() == "echo secret\n"
    # verify only reads, and still never reads through that link (write_all's own guard is not asked there)
    result = CliRunner().invoke(cli, ["verify", "--target", str(target), "--patchset", str(root)])
    assert result.exit_code != 0 and "scripts/link.sh" in result.output
    assert "leads out of the tree through a symlink" in result.output


def test_a_key_path_is_only_ever_a_key(tmp_path: Path) -> None:
    """A key path names keys inside the one file; '..' or '.git' in it are key names, never paths."""
    target = tree(tmp_path / "tree")
    root = patchset(tmp_path / "ps", "config-key", "conf.yaml", 'path = ["..", ".git", "hooks"]\nnow = "hooks: 1\\n"')
    before = snapshot(tmp_path)
    result = CliRunner().invoke(cli, ["apply", "--target", str(target), "--patchset", str(root), "--json"])
    assert result.exit_code != 0
    assert json.loads(result.stdout)["results"][0]["reason"] == (
        "conf.yaml: there is no key '..'.'.git' to hold key '..'.'.git'.hooks (upstream removed or renamed it); "
        "add the key by hand where it belongs now"
    )
    assert snapshot(tmp_path) == before


def test_a_deleted_binary_file_comes_back_byte_for_byte_from_the_record(tmp_path: Path) -> None:
    target = tree(tmp_path / "tree")
    data = bytes(range(256)) * 3
    (target / "model.bin").write_bytes(data)
    (target / "model.bin").chmod(0o600)
    root = patchset(tmp_path / "ps", "delete-file", "model.bin", f'sha256 = "{hashlib.sha256(data).hexdigest()}"')
    before = snapshot(target)
    result = CliRunner().invoke(cli, ["apply", "--target", str(target), "--patchset", str(root)])
    assert result.exit_code == 0, result.output
    assert not (target / "model.bin").exists()
    result = CliRunner().invoke(cli, ["revert", "--target", str(target), "--patchset", str(root)])
    assert result.exit_code == 0, result.output
    assert snapshot(target) == before  # bytes and mode 0600
