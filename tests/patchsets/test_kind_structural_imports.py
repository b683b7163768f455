"""Imports the fork added are set-added to the module's imports (issue 38 requirement 2).

On real verl trees: a fork of 0.5.0's ray trainer adds ``import re``, extends the
``verl.protocol`` import with ``DataProtoItem`` and uses it in a function, and extends the
``seqlen_balancing`` import with ``calculate_workload``. verl 0.6.1 removed the imports these
edits were anchored by (``from enum import Enum``, the ``Worker`` import) and imports
``calculate_workload`` itself. Anchored by text, both import patches conflicted and held the use back;
set-added, every patch lands, ``calculate_workload`` is not imported twice, and apply, verify and revert keep
their promises (idempotent, byte-exact revert).
"""

from __future__ import annotations

import ast
import json
from collections.abc import Callable
from pathlib import Path

from tests.capture.test_capture_refuses import capture
from tests.clirun import run

from patchctl import releases

TRAINER = "verl/trainer/ppo/ray_trainer.py"
PROTOCOL = "from verl.protocol import pad_dataproto_to_divisor, unpad_dataproto\n"
SEQLEN = "from verl.utils.seqlen_balancing import get_seqlen_balanced_partitions, log_seqlen_unbalance\n"
USE_AT = '    responses = data.batch["responses"]\n'


def fork_of(base: str) -> str:
    return (
        base.replace("from enum import Enum\n", "from enum import Enum\nimport re  # Uky\n")
        .replace(PROTOCOL, PROTOCOL.replace("unpad_dataproto", "unpad_dataproto, DataProtoItem  # Uky"))
        .replace(
            SEQLEN,
            SEQLEN.replace("balanced_partitions", "balanced_partitions, calculate_workload").replace("\n", "  # Uky\n"),
        )
        .replace(USE_AT, "    assert not isinstance(data, DataProtoItem)  # Uky\n" + USE_AT, 1)
    )


def top_imports(text: str) -> list[str]:
    return [ast.unparse(s) for s in ast.parse(text).body if isinstance(s, (ast.Import, ast.ImportFrom))]


def test_imports_whose_anchors_upstream_removed_are_set_added(
    tmp_path: Path, release_tree: Callable[[str], Path]
) -> None:
    base = (releases.materialize("0.5.0") / TRAINER).read_text()
    code, doc, human = capture(tmp_path, {TRAINER: base}, {TRAINER: fork_of(base)})
    assert code == 0 and doc["left_out"] == [] and len(doc["patches"]) == 4, human
    ps = tmp_path / "out"
    tree = release_tree("0.6.1")
    pristine = (tree / TRAINER).read_bytes()

    code, out = run("apply", "--target", str(tree), "--patchset", str(ps), "--json")
    rows = {r["patch"]: r for r in json.loads(out)["results"]}
    assert code == 0, rows
    statuses = sorted(r["status"] for r in rows.values())
    assert statuses == ["already-applied", "applied", "applied", "applied"], rows  # 0.6.1 imports calculate_workload
    text = (tree / TRAINER).read_text()
    imports = top_imports(text)
    assert imports.count("import re") == 1 and "from verl.protocol import DataProtoItem" in imports, imports
    assert sum("calculate_workload" in i for i in imports) == 1, imports
    assert "from verl.protocol import DataProtoItem  # Uky\n" in text
    assert "    assert not isinstance(data, DataProtoItem)  # Uky\n" in text

    assert run("verify", "--target", str(tree), "--patchset", str(ps))[0] == 0
    code, out = run("apply", "--target", str(tree), "--patchset", str(ps), "--json")
    assert code == 0 and {r["status"] for r in json.loads(out)["results"]} == {"already-applied"}, out
    code, out = run("revert", "--target", str(tree), "--patchset", str(ps))
    assert code == 0 and (tree / TRAINER).read_bytes() == pristine, out


def test_an_import_still_at_its_anchors_goes_there_as_the_fork_wrote_it(
    tmp_path: Path, release_tree: Callable[[str], Path]
) -> None:
    """Where the anchors still lead to one place, the fork's own line is written there (what
    capture's byte-exact proof relies on), not the cut-down set-add."""
    base = (releases.materialize("0.5.0") / TRAINER).read_text()
    code, _, human = capture(tmp_path, {TRAINER: base}, {TRAINER: fork_of(base)})
    assert code == 0, human
    tree = release_tree("0.5.0")
    code, out = run("apply", "--target", str(tree), "--patchset", str(tmp_path / "out"), "--json")
    assert code == 0 and (tree / TRAINER).read_text() == fork_of(base), out


RM = "verl/workers/reward_manager/__init__.py"


def test_a_set_added_import_from_a_file_with_no_final_line_break_is_a_whole_line(
    tmp_path: Path, release_tree: Callable[[str], Path]
) -> None:
    """Skywork-OR1's case: its base ends ``reward_manager/__init__.py`` with the ``prime`` import
    and no line break, and the fork appends one more import. On 0.4.1 (``registry`` and ``batch``
    imports added, ``__all__`` below) the set-added line must end in a break of its own, or it
    swallows the next line and revert cannot find what it wrote."""
    upstream = (releases.materialize("0.4.1") / RM).read_text()
    base = upstream[: upstream.index("from .registry")] + (
        "from .naive import NaiveRewardManager\nfrom .prime import PrimeRewardManager"
    )
    fork = base + "\nfrom .yr_code import YRRewardManager  # Uky"
    code, _, human = capture(tmp_path, {RM: base}, {RM: fork}, "--include", f"{RM}:17")  # the break it adds
    assert code == 0, human
    tree = release_tree("0.4.1")
    pristine = (tree / RM).read_bytes()
    code, out = run("apply", "--target", str(tree), "--patchset", str(tmp_path / "out"), "--json")
    assert code == 0 and [r["status"] for r in json.loads(out)["results"]] == ["applied"], out
    text = (tree / RM).read_text()
    assert "from .prime import PrimeRewardManager\nfrom .yr_code import YRRewardManager  # Uky\n\n# Note" in text
    code, out = run("revert", "--target", str(tree), "--patchset", str(tmp_path / "out"))
    assert code == 0 and (tree / RM).read_bytes() == pristine, out
