"""``patchctl migrate`` runs without click for its plain command lines (issue 39.13), reads them
as click's ``migrate`` does, and says what click's says.

Each plain line is read by both readers (click's parser, through ``migrate_cmd.make_context``,
and :func:`patchctl.cli.quick.read_migrate`) and must give the same options; a few are run as
real processes both ways on the same tree and hosts (the ``patchctl`` script, which takes the
quick reader, and click's group directly) and must print the same and end with the same code,
the seconds taken aside. Lines the quick reader leaves to click are checked to reach click.
"""

from __future__ import annotations

import difflib
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from migrate_fixtures import Site

import patchctl
from patchctl.cli.migrate_cmd import migrate_cmd
from patchctl.cli.migrate_summary import SHORT
from patchctl.cli.quick import MigrateLine, read_migrate

SRC = Path(patchctl.__file__).resolve().parent.parent
#: the ``patchctl`` script, and click's reader of every command line, each run as its own process
SCRIPT = "import sys; sys.argv[0] = 'patchctl'; from patchctl.cli.{} import main; main()"

#: lines the quick reader takes; {tree}, {config} and {top} are filled in
QUICK_LINES = [
    ["loop", "--target", "{tree}", "--config", "{config}"],
    ["loop", "--target", "{tree}", "--config", "{config}", "--json"],
    ["--json", "-t", "{tree}", "--config={config}", "--host", "node1", "loop"],
    ["loop", "--target={tree}", "--config", "{config}", "--dry-run", "--delete", "--checksum"],
    ["loop", "-t", "{tree}", "--config", "{config}", "-p", "uky", "--patchset=uky", "--allow-unverified"],
    ["loop", "--target", "{tree}", "--config", "{config}", "--host=node2", "--host", "node1"],
    ["loop", "--target", "{tree}", "--config", "{config}", "--patchset", "nosuch"],
    ["nosuch", "--target", "{tree}", "--config", "{config}", "--json"],
    ["loop", "--target", "{top}/nowhere", "--config", "{config}"],
    ["loop", "--target", "{tree}", "--config", "{config}", "--host", "node9"],
    ["loop", "--target", "{tree}", "--config", "{top}/none.toml"],
    ["loop", "--target", "{tree}", "--target", "{tree}", "--config", "{config}"],
    ["loop"],
]
#: lines only click reads: help, the options the quick reader leaves, values click refuses or reads its way
CLICK_LINES = [
    ["--help"],
    ["loop", "--help"],
    [],
    ["loop", "extra"],
    ["loop", "--jobs", "1"],
    ["loop", "-j1"],
    ["loop", "--list"],
    ["loop", "--nodes", "a,b"],
    ["loop", "--target"],
    ["loop", "--target", ""],
    ["loop", "--host="],
    ["loop", "--target", "--json"],
    ["loop", "-t{tree}"],
    ["loop", "--config", "{top}"],
    ["loop", "--dry-run=1"],
    ["loop", "--dryrun"],
    ["loop", "--"],
    ["-", "loop"],
]


def filled(line: list[str], site: Site, tree: Path) -> list[str]:
    return [a.format(tree=tree, config=site.dir / "patchctl.toml", top=site.dir) for a in line]


def clicks(args: list[str]) -> MigrateLine:
    """What click's ``migrate`` reads from ``args``, as a :class:`MigrateLine` (and the options
    the quick reader never takes at their defaults)."""
    params = migrate_cmd.make_context("migrate", list(args)).params
    assert (params.pop("jobs"), params.pop("full_list"), params.pop("slurm_nodes")) == (None, False, "")
    params["patchsets"], params["hosts"] = list(params["patchsets"]), list(params["hosts"])
    return MigrateLine(**params)


@pytest.mark.parametrize("line", QUICK_LINES, ids=" ".join)
def test_the_quick_reader_reads_what_click_reads(site: Site, verl_tree: Path, line: list[str]) -> None:
    site.config(aliases=["node1", "node2"])
    args = filled(line, site, verl_tree)
    assert read_migrate(args) == clicks(args)


@pytest.mark.parametrize("line", CLICK_LINES, ids=" ".join)
def test_lines_the_quick_reader_leaves_to_click(site: Site, verl_tree: Path, line: list[str]) -> None:
    site.config(aliases=["node1"])
    assert read_migrate(filled(line, site, verl_tree)) is None, "click has the message for this line"


def test_shell_completion_goes_to_click(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("_PATCHCTL_COMPLETE", "bash_complete")
    assert read_migrate(["loop"]) is None


def run(args: list[str], via_click: bool, cache: Path) -> tuple[int, str, str]:
    head = ["-c", SCRIPT.format("main" if via_click else "entry")]
    env = {**os.environ, "PYTHONPATH": str(SRC), "COLUMNS": "200", "PATCHCTL_CACHE": str(cache)}
    done = subprocess.run(
        [sys.executable, *head, "migrate", *args], env=env, capture_output=True, text=True, timeout=120, check=False
    )
    return done.returncode, done.stdout, done.stderr


def _timeless(out: str) -> str:
    """``out`` with every number of seconds (a fraction) as S, and the hosts' progress lines (which come in the
    order the hosts end) sorted."""
    out = re.sub(r"\b\d+(\.\d+)?e-\d+\b|\b\d+\.\d+\b", "S", out)
    lines = out.splitlines()
    progress = [ln for ln in lines if re.match(r"node\d: (connecting|checking|done)", ln)]
    return "\n".join(sorted(progress) + [ln for ln in lines if ln not in progress])


@pytest.mark.parametrize(
    "line",
    [QUICK_LINES[0], QUICK_LINES[1], QUICK_LINES[3], QUICK_LINES[6], QUICK_LINES[7], QUICK_LINES[9]],
    ids=" ".join,
)
def test_the_quick_migrate_says_what_click_s_says(site: Site, verl_tree: Path, tmp_path: Path, line: list[str]) -> None:
    """The same tree and hosts, the hosts filled first: each way a no-change re-run, a plan, an error."""
    site.config(aliases=["node1", "node2"])
    args = filled(line, site, verl_tree)
    first = run(filled(QUICK_LINES[0], site, verl_tree), True, tmp_path / "cache")
    assert first[0] == 0, first
    code, out, err = run(args, False, tmp_path / "cache")
    clicked = run(args, True, tmp_path / "cache")
    quick = (code, _timeless(out), err)
    assert quick == (clicked[0], _timeless(clicked[1]), clicked[2]), "\n".join(
        difflib.unified_diff(_timeless(clicked[1]).splitlines(), quick[1].splitlines(), "click", "quick")
    )
    assert code in (0, 2), quick
    if "--json" in args and code == 0:
        assert [h["status"] for h in json.loads(out)["hosts"]] == ["ok", "ok"]


def test_a_long_plan_is_summarised_by_folder_as_click_s_migrate_summarises_it(
    site: Site, verl_tree: Path, tmp_path: Path
) -> None:
    """More changes than a plan lists item by item (``migrate_summary.SHORT``): the quick migrate,
    like click's without ``--list`` (a line the quick reader leaves to click), shows the folders
    and points at ``--list``."""
    site.config(aliases=["node1"])
    first = run(filled(QUICK_LINES[0], site, verl_tree), True, tmp_path / "cache")
    assert first[0] == 0, first
    extra = verl_tree / "verl" / "uky_extra"
    extra.mkdir()
    for n in range(SHORT + 5):
        (extra / f"m{n}.py").write_text(f"N = {n}\n")
    args = filled(["loop", "--target", "{tree}", "--config", "{config}", "--dry-run"], site, verl_tree)
    code, out, err = run(args, False, tmp_path / "cache")
    clicked = run(args, True, tmp_path / "cache")
    assert (code, _timeless(out), err) == (clicked[0], _timeless(clicked[1]), clicked[2])
    assert code == 0 and f"(--list shows all {SHORT + 5} items)" in out, (out, err)
