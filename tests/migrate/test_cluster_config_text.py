"""Issue 41 req 5: a control character in a host name, a root or any path of the config is a config
error (exit 2, one line naming the file and the key), before any host is tried or file rendered.

A host named ``"n1\\nmigrate x: 1/1 hosts ok and verified"`` forged that line in migrate's
output, and a ``root`` with a newline put a line of its own into the host's ``env.sh``.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from patchctl.cli.main import cli

FORGED = "migrate c: 1/1 hosts ok and verified"


def run(tmp_path: Path, body: str, *args: str) -> tuple[int, list[str], Path]:
    file = tmp_path / "patchctl.toml"
    file.write_text(body, encoding="utf-8")
    done = CliRunner().invoke(cli, [*(args or ("migrate", "c", "--dry-run")), "--config", str(file)])
    return done.exit_code, done.output.strip().splitlines(), file


@pytest.mark.parametrize(
    ("body", "key", "shown"),
    [
        (f'[clusters.c]\nhosts = ["n1\\n{FORGED}"]\nroot = "/r"\n', "clusters.c.hosts[0]", "\\n"),
        (f'[clusters.c]\nhosts = [{{ ssh = "n1\\r{FORGED}" }}]\nroot = "/r"\n', "clusters.c.hosts[0].ssh", "\\r"),
        ('[clusters.c]\nhosts = ["n1"]\nroot = "/r\\nrm -rf ~"\n', "clusters.c.root", "\\n"),
        ('[clusters.c]\nhosts = [{ ssh = "n1", root = "/s\\n" }]\nroot = "/r"\n', "clusters.c.hosts[0].root", "\\n"),
        ('[clusters.c]\nhosts = ["n1"]\nroot = "/r"\nssh_config = "cfg\\u001b[2K"\n', "clusters.c.ssh_config", "\\033"),
        ('[clusters.c]\nhosts = ["n1"]\nroot = "/r"\ninclude = ["a", "b\\tc"]\n', "clusters.c.include[1]", "\\t"),
        ('[clusters.c]\nhosts = ["n1"]\nroot = "/r"\npython = "py\\u009b"\n', "clusters.c.python", "\\302\\233"),
        (
            '[clusters.c]\nhosts = ["n1"]\nroot = "/r"\n[clusters.c.paths]\nDATA_DIR = "/d\\u001b]0;x\\u0007"\n',
            "clusters.c.paths.DATA_DIR",
            "\\033",
        ),
        (
            '[clusters.c]\nhosts = ["n1"]\nroot = "/r"\n[clusters.c.health]\ncheckpoint_dir = "/ck\\n"\n',
            "clusters.c.health.checkpoint_dir",
            "\\n",
        ),
        ('[clusters.c]\nhosts = ["n1"]\nroot = "/r"\nenv = { "A\\nB" = "1" }\n', "clusters.c.env.A\\nB", "\\n"),
        ('[clusters."c\\nd"]\nhosts = ["n1"]\nroot = "/r"\n', "clusters.c\\nd", "\\n"),
    ],
)
def test_a_control_character_in_the_cluster_config_is_one_line_exit_2(
    tmp_path: Path, body: str, key: str, shown: str
) -> None:
    code, lines, file = run(tmp_path, body)
    assert code == 2, lines
    assert lines == [
        f"error: {file}: key '{key}': contains the control character {shown}; "
        "write it on one line, without control characters"
    ]
    assert not (tmp_path / ".patchctl").exists()


def test_a_control_character_in_a_target_path_is_one_line_exit_2(tmp_path: Path) -> None:
    code, lines, file = run(tmp_path, '[targets]\nmine = "/x\\ny"\n', "verify", "--target", "mine")
    assert code == 2, lines
    assert lines == [
        f"error: {file}: key 'targets.mine': contains the control character \\n; "
        "write it on one line, without control characters"
    ]


def test_plain_unicode_paths_and_names_stay_allowed(tmp_path: Path) -> None:
    body = '[clusters.c]\nhosts = ["nœud-1"]\nroot = "/données/verl Uky"\n[clusters.c.paths]\nDATA_DIR = "/d:1/é"\n'
    code, lines, _ = run(tmp_path, body, "validate", "c", "--dry-run")
    assert code == 0, lines
