"""Exit codes a script can rely on (#19): 0 ok, 1 a check failed, 2 usage or config error,
3 internal error, 130 interrupted; with ``--json`` an error is one JSON object on stdout."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from patchctl.cli import main as cli_main
from patchctl.cli.main import cli
from patchctl.patchsets import loader

README = Path(__file__).resolve().parents[2] / "README.md"


def run(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args))


@pytest.fixture(autouse=True)
def in_empty_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No ./patchctl.toml of the developer's, no verl tree around the current folder."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))


def test_0_ok() -> None:
    assert run("list").exit_code == 0


def test_1_a_check_ran_and_failed(release_tree: Callable[[str], Path]) -> None:
    done = run("verify", "--target", str(release_tree("0.6.1")))  # nothing applied: every patch missing
    assert done.exit_code == 1 and "verify: FAILED" in done.output


def test_2_usage_error() -> None:
    done = run("apply", "--no-such-option")
    assert done.exit_code == 2 and "No such option '--no-such-option'" in done.output


def test_2_usage_error_as_json() -> None:
    done = run("verify", "--json", "--no-such-option")
    assert done.exit_code == 2
    assert json.loads(done.stdout) == {
        "code": 2,
        "error": "No such option '--no-such-option'.",
        "hint": "see `cli verify --help`",
    }


def test_2_config_error(tmp_path: Path) -> None:
    (tmp_path / "patchctl.toml").write_text("[clusters.gpu]\nhosts = []\nroot = '/r'\n")
    done = run("migrate", "gpu")
    assert done.exit_code == 2
    assert (
        done.output == f"error: {Path('patchctl.toml')}: key 'clusters.gpu.hosts': is empty; list at least "
        "one ssh destination\n"
    )


def test_2_config_error_as_json(tmp_path: Path) -> None:
    config = tmp_path / "bad.toml"
    config.write_text("[clusters.gpu\n")
    done = run("verify", "--env", "--cluster", "gpu", "--config", str(config), "--json")
    assert done.exit_code == 2
    doc = json.loads(done.stdout)
    assert set(doc) == {"code", "error", "hint"} and doc["code"] == 2
    assert doc["error"].startswith(f"{config}: key '(document)': not valid TOML") and doc["hint"] == "fix the syntax"


def test_3_internal_error_keeps_the_traceback_in_a_file(monkeypatch: pytest.MonkeyPatch) -> None:
    def planted_bug(specs: object) -> None:
        raise ZeroDivisionError("planted")

    monkeypatch.setattr(loader, "load_patchsets", planted_bug)
    monkeypatch.setattr("patchctl.cli.patch_cmds.load_patchsets", planted_bug)
    done = run("list")
    assert done.exit_code == 3
    log = re.search(r"traceback in (\S+)\)", done.output)
    assert log and "planted_bug" in Path(log.group(1)).read_text() and "Traceback" not in done.output
    as_json = json.loads(run("list", "--json").stdout)
    assert as_json["code"] == 3 and as_json["error"].startswith("internal error ZeroDivisionError: planted")


def test_130_interrupted_as_json(monkeypatch: pytest.MonkeyPatch) -> None:
    def ctrl_c(specs: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr("patchctl.cli.patch_cmds.load_patchsets", ctrl_c)
    done = run("list", "--json")
    assert done.exit_code == 130 and json.loads(done.stdout) == {"code": 130, "error": "interrupted", "hint": ""}


def test_the_codes_are_documented_in_help_and_readme() -> None:
    text = " ".join(run("--help").output.split())
    for said in (
        "0 ok",
        "1 a check ran and failed",
        "2 usage, config or input error",
        "3 internal error",
        "130 interrupted",
    ):
        assert said in text
    readme = README.read_text()
    for code in ("0", "1", "2", "3", "130"):
        assert re.search(rf"^\| `{code}` \|", readme, re.M), code


def test_every_command_is_listed_with_a_whole_first_sentence() -> None:
    out = run("--help").output
    listed = out.split("Commands:\n", 1)[1].split("\n\n", 1)[0]
    assert "..." not in listed
    entries = re.split(r"\n  (?=\S)", "\n" + listed.strip("\n"))
    assert all(" ".join(e.split()).endswith(".") for e in entries if e.strip()), listed
    assert cli_main.summary("Check that a; b is c. More.", 6) == "Check that a."
    assert (
        cli_main.summary("A long sentence without a clause break. More.", 5)
        == "A long sentence without a clause break."
    )
