"""``patchctl verify`` runs without click for its plain command lines (issue 39.13), and says
exactly what click's ``verify`` says: the same stdout, stderr and exit code, run for run.

Each command line is run twice as real processes on the same tree: once as users run it (the
``patchctl`` script's :func:`patchctl.cli.entry.main`, which takes :mod:`patchctl.cli.quick` for
a plain line) and once through click's group directly (:func:`patchctl.cli.main.main`, the
reader of every command line before). Lines the quick reader must leave to click are checked to reach click, and to say
the same as click does too.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import patchctl
from patchctl import releases
from patchctl.cli.quick import VerifyLine, read_verify

SRC = Path(patchctl.__file__).resolve().parent.parent
#: the ``patchctl`` script, and click's reader of every command line, each run as its own process
SCRIPT = "import sys; sys.argv[0] = 'patchctl'; from patchctl.cli.{} import main; main()"


def run(*args: str, via_click: bool, cwd: Path) -> tuple[int, str, str]:
    head = ["-c", SCRIPT.format("main" if via_click else "entry")]
    env = {**os.environ, "PYTHONPATH": str(SRC), "COLUMNS": "200"}
    done = subprocess.run(
        [sys.executable, *head, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=120, check=False
    )
    return done.returncode, done.stdout, done.stderr


@pytest.fixture(scope="module")
def trees(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``applied``: 0.6.1 with uky applied and one stray tag; ``pristine``: 0.6.1 as released."""
    top = tmp_path_factory.mktemp("quick")
    for name in ("applied", "pristine"):
        shutil.copytree(releases.materialize("0.6.1"), top / name, symlinks=True)
    code, out, err = run("apply", "--target", str(top / "applied"), via_click=True, cwd=top)
    assert code == 0, out + err
    with (top / "applied" / "verl" / "__init__.py").open("a") as f:
        f.write("STRAY = 1  # Uky: a hand edit\n")
    (top / "config-dir").mkdir()
    (top / "empty.toml").write_text("")
    return top


#: command lines the quick reader takes: {applied}, {pristine} and {top} are the trees' paths
QUICK_LINES = [
    ["--target", "{applied}", "--json"],
    ["-t", "{applied}"],
    ["--target={applied}", "--strict"],
    ["--json", "--strict", "-t", "{applied}", "-p", "uky"],
    ["--target", "{pristine}"],
    ["--target", "{pristine}", "--json"],
    ["--target", "{applied}", "--patchset=nosuch"],
    ["--target", "{applied}", "-p", "nosuch", "--json"],
    ["--target", "{top}/nowhere"],
    ["--target", "{top}/nowhere", "--json"],
    ["--target", "{applied}", "--config", "{top}/empty.toml", "--json"],
    ["--target", "{applied}", "--config", "{top}/none.toml"],
    ["--target", "{pristine}", "--target", "{applied}", "--json"],
    [],
]
#: command lines only click reads: help, other options, values click refuses or reads its way
CLICK_LINES = [
    ["--help"],
    ["--target", "{applied}", "--repo", "{top}/nowhere", "--json"],
    ["--target"],
    ["--target", ""],
    ["--target="],
    ["--target", "--json"],
    ["-t{applied}"],
    ["--target", "{applied}", "--config", "{top}/config-dir"],
    ["--target", "{applied}", "--stritc"],
    ["--target", "{applied}", "extra"],
    ["--target", "{applied}", "--json=1"],
    ["--target", "{applied}", "--"],
]


def filled(line: list[str], top: Path) -> list[str]:
    return [a.format(applied=top / "applied", pristine=top / "pristine", top=top) for a in line]


@pytest.mark.parametrize("line", QUICK_LINES, ids=" ".join)
def test_the_quick_reader_says_what_click_says(trees: Path, line: list[str]) -> None:
    args = filled(line, trees)
    assert isinstance(read_verify(args), VerifyLine), "this line should run without click"
    cwd = trees / "applied"  # no --target: the tree around the current folder
    quick = run("verify", *args, via_click=False, cwd=cwd)
    assert quick == run("verify", *args, via_click=True, cwd=cwd)
    assert quick[0] in (0, 1, 2)


@pytest.mark.parametrize("line", CLICK_LINES, ids=" ".join)
def test_lines_the_quick_reader_leaves_to_click(trees: Path, line: list[str]) -> None:
    args = filled(line, trees)
    assert read_verify(args) is None, "click has the message for this line"
    quick = run("verify", *args, via_click=False, cwd=trees)
    assert quick == run("verify", *args, via_click=True, cwd=trees)


def test_the_quick_reader_reads_each_option(tmp_path: Path) -> None:
    line = read_verify(["-t", "T", "--patchset=a", "-p", "b", "--strict", "--config", str(tmp_path / "c.toml")])
    assert line == VerifyLine(target="T", patchsets=["a", "b"], strict=True, config=tmp_path / "c.toml")
    assert read_verify(["--json"]) == VerifyLine(as_json=True)


def test_shell_completion_goes_to_click(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("_PATCHCTL_COMPLETE", "bash_complete")
    assert read_verify(["--json"]) is None


@pytest.mark.parametrize("err", [False, True])
@pytest.mark.parametrize("nl", [True, False])
@pytest.mark.parametrize(
    ("text", "color"),
    [("verify: ok", None), ("", None), ("a \x1b[31mred\x1b[0m word from a tree", None), ("\x1b[1mbold\x1b[0m", True)],
)
def test_echo_writes_what_click_echo_writes(
    capsys: pytest.CaptureFixture[str], text: str, color: bool | None, nl: bool, err: bool
) -> None:
    """The commands' output goes through :func:`echo` instead of ``click.echo``: the same text on
    the same stream, colour codes stripped for a stream that is no terminal unless asked to keep."""
    import click

    from patchctl.cli.echo import echo

    echo(text, nl=nl, err=err, color=color)
    ours = capsys.readouterr()
    click.echo(text, nl=nl, err=err, color=color)
    assert ours == capsys.readouterr()


def test_the_quick_verify_waits_for_a_writer_as_click_s_does(trees: Path) -> None:
    """A verify without click takes the tree's lock too: an apply still writing the tree keeps
    it waiting, then refused with the same message."""
    from patchctl import lock

    tree = trees / "applied"
    with lock.hold(lock.path_for(tree), shared=False, what=tree):
        env = {"PATCHCTL_LOCK_WAIT": "0.3"}
        os.environ.update(env)
        try:
            quick = run("verify", "--target", str(tree), "--json", via_click=False, cwd=trees)
            assert quick == run("verify", "--target", str(tree), "--json", via_click=True, cwd=trees)
        finally:
            os.environ.pop("PATCHCTL_LOCK_WAIT")
    assert quick[0] == 2 and "in use by another patchctl" in quick[1], quick
