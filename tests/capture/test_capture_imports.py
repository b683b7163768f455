"""A run of imports the fork inserted becomes one patch per import (issue 38 requirement 2), so
a use needs only the import of the name it uses: one import held back no longer holds back the
users of the others. On a real verl tree (0.5.0's ray trainer), proven byte-exact on BASE, and
applied on 0.6.1, whose imports around the insertion changed."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import tomllib
from tests.capture.test_capture_refuses import capture
from tests.clirun import run

from patchctl import releases

TRAINER = "verl/trainer/ppo/ray_trainer.py"
AFTER = "import json\n"
USE_RE = '    responses = data.batch["responses"]\n'
USE_CSV = "def compute_advantage(\n"


def fork_of(base: str) -> str:
    return (
        base.replace(AFTER, AFTER + "import re  # Uky\nimport csv  # Uky\n\n", 1)
        .replace(USE_RE, '    assert re.match("x", "x")  # Uky\n' + USE_RE, 1)
        .replace(USE_CSV, "CSV_DIALECT = csv.excel  # Uky\n\n\n" + USE_CSV, 1)
    )


def test_each_inserted_import_is_its_own_patch_and_a_use_needs_only_its_own(
    tmp_path: Path, release_tree: Callable[[str], Path]
) -> None:
    base = (releases.materialize("0.5.0") / TRAINER).read_text()
    code, doc, human = capture(tmp_path, {TRAINER: base}, {TRAINER: fork_of(base)})
    assert code == 0 and doc["left_out"] == [], human
    patches = tomllib.loads((tmp_path / "out" / "patchset.toml").read_text())["patch"]
    by_after = {p["params"]["after"].strip(): p for p in patches}
    imp_re, imp_csv = by_after["import re  # Uky"], by_after["import csv  # Uky"]
    use_re = next(p for p in patches if "re.match" in p["params"]["after"])
    use_csv = next(p for p in patches if "csv.excel" in p["params"]["after"])
    assert use_re["needs"] == [imp_re["id"]] and use_csv["needs"] == [imp_csv["id"]], patches
    assert imp_csv["params"]["above"][-1] == "import re  # Uky"  # anchored by the piece before it

    tree = release_tree("0.6.1")
    code, out = run("apply", "--target", str(tree), "--patchset", str(tmp_path / "out"), "--json")
    assert code == 0 and {r["status"] for r in json.loads(out)["results"]} == {"applied"}, out
    text = (tree / TRAINER).read_text()
    assert text.count("import re  # Uky\n") == 1 and text.count("import csv  # Uky\n") == 1
    compile(text, TRAINER, "exec")
