"""Issue 18 req 5 for validate: its numbers are checked as ``train --timeout`` is, and the
cluster's env names when the config loads (before any host is touched)."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from patchctl.cli.main import cli


def invoke(config: Path, *args: str) -> tuple[int, str]:
    done = CliRunner().invoke(cli, ["validate", "loop", "--config", str(config), "--dry-run", *args])
    return done.exit_code, done.output


@pytest.fixture
def config(tmp_path: Path) -> Path:
    path = tmp_path / "patchctl.toml"
    path.write_text('[clusters.loop]\nhosts = ["node1"]\nroot = "/srv/verl_Uky"\n')
    return path


@pytest.mark.parametrize("option", ["--ray-timeout", "--timeout", "--lease"])
@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "-1", "0"])
def test_seconds_must_be_finite_and_above_zero(config: Path, option: str, value: str) -> None:
    code, out = invoke(config, f"{option}={value}")
    assert code == 2, out
    assert f"Invalid value for '{option}': {float(value)} is not a number of seconds above 0" in out


@pytest.mark.parametrize("value", ["-1", "nan", "inf", "1.5"])
def test_ray_cpus_is_a_whole_number_not_below_zero(config: Path, value: str) -> None:
    code, out = invoke(config, f"--ray-cpus={value}")
    assert code == 2 and "Invalid value for '--ray-cpus'" in out, out


def test_good_numbers_pass(config: Path) -> None:
    code, out = invoke(config, "--ray-timeout", "30", "--timeout", "600", "--lease", "20", "--ray-cpus", "0")
    assert code == 0, out


def test_a_cluster_env_name_that_is_no_variable_is_refused_when_the_config_loads(config: Path) -> None:
    config.write_text(config.read_text() + '[clusters.loop.env]\n"BAD NAME;x" = "1"\n')
    code, out = invoke(config)
    assert code == 2, out
    assert out.endswith(
        "patchctl.toml: key 'clusters.loop.env.BAD NAME;x': is not a shell variable name; use letters, "
        "digits and _ (not starting with a digit)\n"
    )
