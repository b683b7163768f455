"""Shell completion (#19): ``patchctl completion SHELL`` prints click's script, and the values it
completes come from the config and the patchsets: cluster names, target names, patch ids,
patchsets and profiles. A broken config completes nothing rather than print a traceback."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from click.shell_completion import BashComplete
from click.testing import CliRunner

from patchctl.cli.main import cli


def complete(*words: str) -> list[str]:
    """What bash would offer after ``patchctl WORDS...`` (the last word is the one being typed)."""
    comp = BashComplete(cli, {}, "patchctl", "_PATCHCTL_COMPLETE")
    return [c.value for c in comp.get_completions(list(words[:-1]), words[-1]) if c.type == "plain"]


@pytest.fixture(autouse=True)
def config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    path = tmp_path / "patchctl.toml"
    path.write_text(
        '[targets]\nmine = "/x"\nold = "verl==0.6.1"\n'
        '[clusters.gpu]\nhosts = ["a"]\nroot = "/r"\n[clusters.lab]\nhosts = ["b"]\nroot = "/r"\n'
    )
    return path


def test_cluster_names() -> None:
    assert complete("migrate", "") == ["gpu", "lab"]
    assert complete("validate", "l") == ["lab"]
    assert complete("verify", "--env", "--cluster", "g") == ["gpu"]
    assert complete("train", "--cluster", "") == ["gpu", "lab"]


def test_cluster_names_from_the_config_option(tmp_path: Path) -> None:
    other = tmp_path / "other.toml"
    other.write_text('[clusters.far]\nhosts = ["c"]\nroot = "/r"\n')
    assert complete("migrate", "--config", str(other), "") == ["far"]


def test_patch_ids_patchsets_profiles_and_targets() -> None:
    assert complete("apply", "--only", "triton") == ["triton-cuda-stubs"]
    assert complete("apply", "--patchset", "") == ["uky", "verl05-nofa-hf"]
    assert "smoke-vllm" in complete("train", "--profile", "smoke")
    assert complete("verify", "--target", "") == ["mine", "old"]


def test_a_broken_config_completes_nothing(config: Path) -> None:
    config.write_text("[clusters.gpu\n")
    assert complete("migrate", "") == []


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_the_script_calls_patchctl_back(shell: str) -> None:
    out = CliRunner().invoke(cli, ["completion", shell])
    assert out.exit_code == 0 and f"_PATCHCTL_COMPLETE={shell}_complete" in out.output.replace('"', "")


def test_the_bash_script_completes_a_cluster_in_a_real_shell(config: Path) -> None:
    # the script as bash sources it, with patchctl on PATH as this interpreter
    script = CliRunner().invoke(cli, ["completion", "bash"]).output
    shim = config.parent / "bin"
    shim.mkdir()
    (shim / "patchctl").write_text(f'#!/bin/sh\nexec {sys.executable} -m patchctl "$@"\n')
    (shim / "patchctl").chmod(0o755)
    words = 'COMP_WORDS=(patchctl migrate g); COMP_CWORD=2; _patchctl_completion patchctl; echo "${COMPREPLY[@]}"'
    probe = f"{script}\n{words}"
    done = subprocess.run(
        ["bash", "-c", probe],
        capture_output=True,
        text=True,
        env={"PATH": f"{shim}:/usr/bin:/bin", "PYTHONPATH": ":".join(sys.path)},
        cwd=config.parent,
    )
    assert done.stdout.split() == ["gpu"], done.stderr
