"""The fork benchmark's judge (benchmarks/forks_hunks.py) counts a hunk the same way for both
tools; whitespace ``git diff`` attaches to an edit is not part of what must be placed."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

from realparts import require

SCRIPT = Path(__file__).resolve().parent.parent / "benchmarks" / "forks_hunks.py"
spec = importlib.util.spec_from_file_location("forks_hunks_under_test", SCRIPT)
assert spec is not None and spec.loader is not None
fh = importlib.util.module_from_spec(spec)
sys.modules[spec.name] = fh
spec.loader.exec_module(fh)

BASE = "def main():\n    a = 1\n    return a\n\n\ndef other():\n    pass\n"
# the fork appends to main, with two whitespace-only lines git diff attaches to the hunk
FORK = "def main():\n    a = 1\n    b = a + 1\n    print(b)\n    \n    \n    return a\n\n\ndef other():\n    pass\n"


def _hunks(tmp: Path) -> list:
    (tmp / "a.py").write_text(BASE)
    (tmp / "b.py").write_text(FORK)
    diff = subprocess.run(
        ["git", "diff", "--no-index", "-U0", "--no-color", str(tmp / "a.py"), str(tmp / "b.py")],
        capture_output=True,
        text=True,
    ).stdout
    return fh.parse("m.py", diff)


def test_whitespace_lines_at_a_hunks_edge_need_not_be_placed(tmp_path: Path) -> None:
    require("git")
    hunks = _hunks(tmp_path)
    assert len(hunks) == 1 and hunks[0].added[-1].strip() == ""
    placed = "def main():\n    a = 1\n    b = a + 1\n    print(b)\n    return a\n\n\ndef other():\n    pass\n"
    assert fh.judge(hunks, BASE, FORK, BASE, placed).placed[hunks[0]]
    # the edit's own lines are still required
    missing = "def main():\n    a = 1\n    b = a + 1\n    return a\n\n\ndef other():\n    pass\n"
    assert not fh.judge(hunks, BASE, FORK, BASE, missing).placed[hunks[0]]
