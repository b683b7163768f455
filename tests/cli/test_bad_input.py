"""Bad input: one line naming the thing and the fix, a non-zero exit, nothing written."""

from __future__ import annotations

import shutil
from pathlib import Path

from click.testing import CliRunner
from tests.conftest import snapshot

from patchctl.cli.main import cli
from patchctl.patchsets.loader import builtin_dir


def run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, list(args))
    return result.exit_code, result.output


def one_error_line(out: str) -> str:
    lines = [ln for ln in out.splitlines() if ln.strip()]
    assert len(lines) == 1, out
    assert lines[0].startswith("error: "), out
    return lines[0]


def test_not_a_verl_tree(tmp_path: Path) -> None:
    code, out = run("apply", "--target", str(tmp_path))
    assert code == 2
    assert one_error_line(out) == (
        f"error: {tmp_path.resolve()}: not a verl tree (no verl/__init__.py there or in any folder above); "
        "pass --target with a verl checkout, "
        "a release such as verl==0.6.1, or a configured name"
    )


def test_unknown_target_name() -> None:
    code, out = run("verify", "--target", "no-such-cluster-name")
    assert code == 2
    assert "no-such-cluster-name: not a directory, not a release spec (verl==X.Y.Z)" in one_error_line(out)


def test_unknown_release() -> None:
    code, out = run("apply", "--target", "verl==0.0.99")
    assert code == 2
    line = one_error_line(out)
    assert line.startswith("error: verl==0.0.99: no such source release could be downloaded")
    assert "https://pypi.org/project/verl/#history" in line


def test_syntax_error_in_target(release_tree) -> None:
    tree = release_tree("0.6.1")
    f = tree / "verl/workers/rollout/vllm_rollout/vllm_async_server.py"
    f.write_text(f.read_text().replace("async def run_server(self, args", "async def run_server(self, args,,", 1))
    before = snapshot(tree)
    code, out = run("apply", "--target", str(tree), "--force")
    assert code == 2
    line = one_error_line(out)
    assert "verl/workers/rollout/vllm_rollout/vllm_async_server.py:" in line
    assert "not valid Python" in line and "fix the file or restore it with git checkout" in line
    assert snapshot(tree) == before


def test_read_only_file_writes_nothing(release_tree) -> None:
    tree = release_tree("0.6.1")
    f = tree / "verl/workers/rollout/vllm_rollout/vllm_rollout_spmd.py"
    f.chmod(0o444)
    before = snapshot(tree)
    code, out = run("apply", "--target", str(tree))
    assert code == 2
    assert "vllm_rollout_spmd.py: cannot write (the file is read-only)" in one_error_line(out)
    assert snapshot(tree) == before


def test_read_only_directory_writes_nothing(release_tree) -> None:
    """Also as root: a write failing midway (here: a directory turned into a file) rolls back."""
    tree = release_tree("0.6.1")
    (tree / "examples").write_text("not a directory\n")
    before = snapshot(tree)
    code, out = run("apply", "--target", str(tree), "--force")
    assert code == 2
    assert "cannot write" in one_error_line(out)
    assert snapshot(tree) == before


def test_malformed_manifest_names_file_patch_key_and_fix(tmp_path: Path, release_tree) -> None:
    ps = tmp_path / "mine"
    shutil.copytree(builtin_dir() / "uky", ps)
    manifest = ps / "patchset.toml"
    manifest.write_text(manifest.read_text().replace('kind = "prelude"', 'kind = "prelud"', 1))
    code, out = run("apply", "--target", str(release_tree("0.6.1")), "--patchset", str(ps))
    assert code == 2
    assert one_error_line(out) == (
        f"error: {manifest}: patch 'triton-cuda-stubs', key 'patch[1].kind': 'prelud' is not allowed; "
        "use one of: add-file, blob, config-key, delete-file, guard-import, keyword-rename, keyword-value, prelude, "
        "rename-file, requirement, shell-env, structural, text-hunk"
    )


def test_manifest_missing_key(tmp_path: Path) -> None:
    ps = tmp_path / "p"
    ps.mkdir()
    (ps / "patchset.toml").write_text(
        '[patchset]\nname = "p"\ntag = "X"\n[[patch]]\nid = "a"\ntitle = "t"\nkind = "prelude"\n'
        'target = ["x.py"]\n[patch.params]\nblock = "import os"\n'
    )
    code, out = run("list", "--patchset", str(ps))
    assert code == 2
    assert one_error_line(out) == (
        f"error: {ps / 'patchset.toml'}: patch 'a', key 'patch[0].why': missing; add it (the reason the change exists)"
    )


def test_manifest_invalid_toml(tmp_path: Path) -> None:
    ps = tmp_path / "p"
    ps.mkdir()
    (ps / "patchset.toml").write_text("[patchset\n")
    code, out = run("list", "--patchset", str(ps))
    assert code == 2
    assert "key '(document)': not valid TOML" in one_error_line(out)


def test_unknown_only_id(release_tree) -> None:
    code, out = run("apply", "--target", str(release_tree("0.6.1")), "--only", "nope")
    assert code == 2
    assert one_error_line(out).startswith("error: --only nope: no such patch in the loaded patchsets; known ids: ")


def test_unknown_patchset() -> None:
    code, out = run("list", "--patchset", "nonexistent")
    assert code == 2
    assert "neither a directory with patchset.toml nor a built-in patchset" in one_error_line(out)


def test_configured_target_name(tmp_path: Path, release_tree, monkeypatch) -> None:
    tree = release_tree("0.5.0")
    (tmp_path / "patchctl.toml").write_text(f'[targets]\nlab = "{tree}"\n')
    monkeypatch.chdir(tmp_path)
    code, out = run("apply", "--target", "lab", "--json", "--dry-run")
    assert code == 0, out
    assert f'"target": "{tree}"' in out


def test_list_shows_why() -> None:
    code, out = run("list")
    assert code == 0
    assert "vllm-enable-log-requests" in out and "AttributeError" in out
    assert "drop_when: >=0.7.0" in out
