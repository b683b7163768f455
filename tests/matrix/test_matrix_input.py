"""`--versions` parsing and the matrix's own bookkeeping, without unpacking any tree."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.matrix.matrix_helpers import invoke

from patchctl.matrix.columns import Source
from patchctl.matrix.run import Column, Matrix
from patchctl.patchsets.engine import PatchResult
from patchctl.patchsets.model import Outcome


@pytest.mark.parametrize(
    ("versions", "message"),
    [
        (
            "0.6.1,main",
            "error: --versions main: not a release version (X.Y.Z or verl==X.Y.Z); "
            "to name git refs of a local checkout, pass --repo PATH\n",
        ),
        ("0.6.1,verl==0.6.1", "error: --versions 0.6.1: is given twice; list each version once\n"),
        ("0.6.1,,0.7.0", "error: --versions 0.6.1,,0.7.0: has an empty entry; remove the extra comma\n"),
        (
            " , ",
            "error: --versions ' , ': no versions given; list them comma-separated, e.g. --versions "
            "0.6.1,verl==0.7.0 (releases) or --repo PATH --versions v0.6.1,main (refs)\n",
        ),
    ],
)
def test_bad_version_lists(versions: str, message: str) -> None:
    result = invoke("matrix", "--versions", versions)
    assert result.exit_code == 2
    assert result.output == message


def test_json_and_markdown_exclude_each_other() -> None:
    result = invoke("matrix", "--versions", "0.6.1", "--json", "--markdown")
    assert result.exit_code == 2
    assert "pass at most one of --json and --markdown" in result.output


def test_unknown_release_downloads_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATCHCTL_CACHE", str(tmp_path))
    result = invoke("matrix", "--versions", "0.0.0.0")
    assert result.exit_code == 2
    assert result.output.startswith("error: verl==0.0.0.0: no such source release could be downloaded (")
    assert result.output.endswith("check the version on https://pypi.org/project/verl/#history\n")
    assert list((tmp_path / "releases").iterdir()) == []


def _column(label: str, statuses: dict[tuple[str, str], Outcome]) -> Column:
    results = tuple(PatchResult(ps, pid, s, "f.py", "why") for (ps, pid), s in statuses.items())
    return Column(Source(label, release=label), label, results, ())


def test_first_superseded_follows_the_given_order_and_ids_clash_by_patchset() -> None:
    rows = (("a", "p"), ("b", "p"), ("a", "q"))
    sup, app, con, amb = (Outcome.SUPERSEDED_UPSTREAM, Outcome.APPLIED, Outcome.CONFLICT, Outcome.AMBIGUOUS)
    columns = (
        _column("0.7.0", {rows[0]: sup, rows[1]: app, rows[2]: con}),
        _column("0.6.1", {rows[0]: app, rows[1]: sup, rows[2]: amb}),
        _column("0.8.0", {rows[0]: sup, rows[1]: sup, rows[2]: app}),
    )
    matrix = Matrix(("a", "b"), rows, columns)
    assert [matrix.name(r) for r in rows] == ["a/p", "b/p", "q"]
    assert [matrix.first_superseded(r) for r in rows] == ["0.7.0", "0.6.1", None]
    assert [matrix.problems(r) for r in rows] == [[], [], ["0.7.0", "0.6.1"]]
    assert not matrix.ok
