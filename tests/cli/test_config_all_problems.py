"""A config's check reports every problem of the file at once, each with "did you mean" (issue
39, requirement 9): mistyped top-level tables were ignored in silence, and only the first bad key
of a file was reported, so a config with four mistakes took four runs."""

from __future__ import annotations

from pathlib import Path

from tests.clirun import run

BAD = """\
[targest]
mine = "/tmp"

[cluster.gpu]
hosts = ["a"]

[clusters.c]
hosts = ["n1"]
rot = "/x"
timeot = 3

[clusters.d]
hosts = ["n2"]
root = "/y"
profil = "standard"
"""


def test_every_problem_of_the_file_in_one_run(tmp_path: Path) -> None:
    config = tmp_path / "patchctl.toml"
    config.write_text(BAD)
    code, out = run("migrate", "c", "--config", str(config))
    assert code == 2
    assert f"error: {config}: 6 problems; fix each, then run again:" in out
    for line in (
        "  - targest: unknown key (did you mean 'targets'?)",
        "  - cluster: unknown key (did you mean 'clusters'?)",
        "  - clusters.c.rot: unknown key (did you mean 'root'?)",
        "  - clusters.c.timeot: unknown key (did you mean 'timeout'?)",
        "  - clusters.c.root: missing",
        "  - clusters.d.profil: unknown key (did you mean 'profile'?)",
    ):
        assert any(ln.startswith(line) for ln in out.splitlines()), line


def test_one_problem_reads_as_before(tmp_path: Path) -> None:
    config = tmp_path / "patchctl.toml"
    config.write_text('[clusters.c]\nhosts = ["n1"]\nroot = "/r"\nprofil = "standard"\n')
    code, out = run("migrate", "c", "--config", str(config))
    assert code == 2
    assert out.startswith(f"error: {config}: key 'clusters.c.profil': unknown key (did you mean 'profile'?); use one")


def test_a_listed_problem_cannot_forge_a_line(tmp_path: Path) -> None:
    """Only the list's own line breaks stay: a key with a newline in it is escaped."""
    config = tmp_path / "patchctl.toml"
    config.write_text('"x\\nmigrate c: 1/1 hosts ok" = 1\ntargest = 2\n[clusters.c]\nhosts = ["n1"]\nroot = "/r"\n')
    code, out = run("migrate", "c", "--config", str(config))
    assert code == 2
    assert "2 problems" in out
    assert not any(ln.startswith("migrate c: 1/1 hosts ok") for ln in out.splitlines())
    assert "x\\nmigrate c: 1/1 hosts ok" in out
